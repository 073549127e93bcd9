"""Resumable DP fine-tuning: the trainable weights and optimizer state as safetensors, the
random generators' states and the tracked curve as JSON (nothing pickled), swapped in atomically."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def save_checkpoint(folder: Path, step: int, model, optimizer, generators: dict, state: dict) -> None:
    """``folder/step-N/`` (weights, optimizer tensors, JSON state), then ``latest.json`` -> it."""
    target = folder / f"step-{step:07d}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    save_file({n: p.detach().contiguous().cpu() for n, p in model.named_parameters() if p.requires_grad},
              target / "weights.safetensors")
    opt = optimizer.state_dict()
    tensors = {f"state.{i}.{k}": v.detach().cpu() for i, s in opt["state"].items() for k, v in s.items()}
    tensors |= {f"rng.{name}": g.get_state() for name, g in generators.items()}
    save_file(tensors, target / "optimizer.safetensors")
    (target / "state.json").write_text(json.dumps(state | {"step": step, "param_groups": opt["param_groups"]}))
    pointer = folder / "latest.json.tmp"
    pointer.write_text(json.dumps({"checkpoint": target.name}))
    pointer.replace(folder / "latest.json")
    for old in folder.glob("step-*"):
        if old != target:
            shutil.rmtree(old, ignore_errors=True)


def checkpoint_exists(folder: Path) -> bool:
    return (folder / "latest.json").exists()


def load_checkpoint(folder: Path) -> tuple[Path, dict] | None:
    try:
        target = folder / json.loads((folder / "latest.json").read_text())["checkpoint"]
        return target, json.loads((target / "state.json").read_text())
    except (OSError, ValueError, KeyError):
        return None


def restore(target: Path, state: dict, model, optimizer, generators: dict, device) -> None:
    weights = load_file(target / "weights.safetensors", device=str(device))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)
    tensors = load_file(target / "optimizer.safetensors")
    opt_state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("state."):
            _, index, name = key.split(".", 2)
            opt_state.setdefault(int(index), {})[name] = value
    optimizer.load_state_dict({"state": opt_state, "param_groups": state["param_groups"]})
    for name, g in generators.items():
        g.set_state(tensors[f"rng.{name}"])
