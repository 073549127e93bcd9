"""Which calibration a CPU affords works on the shift scenario? (issue #45, item 4)

The shift scenario (``python -m core shift-build``) fine-tunes all of SmolLM2-135M's weights for
an epoch on plays it does not know, with every plant a line inside a trained speech. Each
candidate of ``bench.domain_calibration`` scores the scenario's training texts (the mean
per-token log-probability gain of the fine-tune over the reference), and this script prints,
per candidate, where the texts that hold a plant rank among all training texts, and its CPU
time as a ratio to the uncalibrated scoring (this process's CPU time, all its threads):

* none: the gain over the base;
* the reference-free corrections from the public sample: token frequency (DC-PDD), expected
  token gain (the base's and the fine-tune's loss on the public sample, per token), the gain as
  a z-score among public texts of the same length;
* domain references: the CPU default (all weights, ``CPU_DOMAIN_STEPS`` steps) and LoRA for the
  steps it trains in the same time (``figures.shift_figures.LORA_STEPS``), their training
  counted in their cost.

It runs in a lab home of its own (the build and the converted SmolLM2 linked in), so that no
score and no reference is cached from an earlier run.

Run from the repository root after the build: ``.venv/bin/python -m bench.bench_shift_calibration``
(minutes on a CPU, more the first time the references train).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from bench.domain_calibration import cheap_candidates, reference_candidates
from core import sources
from core.calibration.config import CPU_DOMAIN_STEPS
from core.demo.presets import scenario_build
from core.models import load_model
from core.readers.data import read_texts
from figures.shift_figures import LORA_STEPS, SAMPLE, SCENARIO

REFERENCES = {f"all weights, {CPU_DOMAIN_STEPS} steps (CPU default)": dict(steps=CPU_DOMAIN_STEPS),
              f"LoRA, {LORA_STEPS} steps (the same time)": dict(steps=LORA_STEPS, weights="lora")}


def plant_texts() -> dict[int, str]:
    """Index of each training text that holds a plant -> the plant's kind (or phrase)."""
    rows = [json.loads(line) for line in
            open(sources.data_path(f"{SCENARIO}:private_train"), encoding="utf-8")]
    manifest = scenario_build(SCENARIO)
    names = {manifest["secret"]: "secret"} | {
        phrase: f"phrase x{count}" for phrase, count in manifest["canaries"]}
    return {i: name for i, row in enumerate(rows) for plant, name in names.items()
            if plant in row["text"]}


def report(scores: dict, costs: dict, notes: dict, plants: dict[int, str]) -> None:
    """Per candidate: the best rank of each plant's texts, how many of the plant-holding texts
    rank within the top len(plants), and the cost."""
    kinds = sorted(set(plants.values()))
    print(f"{'candidate':44s} " + " ".join(f"{k:>12s}" for k in kinds)
          + f" {'in top ' + str(len(plants)):>10s} {'CPU (x none)':>12s}")
    for name, values in scores.items():
        rank = 1 + np.argsort(np.argsort(-values))
        best = {k: min(rank[i] for i, kind in plants.items() if kind == k) for k in kinds}
        top = sum(rank[i] <= len(plants) for i in plants)
        print(f"{name:44s} " + " ".join(f"{best[k]:>12d}" for k in kinds)
              + f" {top:>10d} {costs[name] / costs['none']:>12.1f}  {notes.get(name, '')}")


def fresh_home() -> Path:
    """A new lab home holding links to this one's shift build and converted models."""
    from core.paths import home

    shared, fresh = home(), Path(tempfile.mkdtemp(prefix="bench-shift-"))
    (fresh / SCENARIO).symlink_to(shared / SCENARIO)
    (fresh / "models").mkdir()
    (fresh / "models" / "gguf").symlink_to(shared / "models" / "gguf")
    return fresh


def main() -> None:
    os.environ["LEAKAGE_LAB_HOME"] = str(fresh_home())
    started = time.strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()[0]
    target = load_model(f"{SCENARIO}:updated", name="shift_finetune", device="cpu")
    base = load_model("smollm2", name="its_base", device="cpu")
    texts = read_texts(str(sources.data_path(f"{SCENARIO}:private_train")))
    public = read_texts(str(sources.data_path(SAMPLE)))
    plants = plant_texts()
    scores, costs = cheap_candidates(target, base, public, texts)
    case = SimpleNamespace(base="smollm2", public_file=SAMPLE)
    more, more_costs, notes = reference_candidates(case, target, texts, costs["none"], REFERENCES)
    print(f"shift scenario: {len(texts)} training texts, {len(plants)} hold a plant; "
          f"{platform.machine()} CPU, {os.cpu_count()} cores, load {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end, {started}")
    report(scores | more, costs | more_costs, notes, plants)


if __name__ == "__main__":
    main()
