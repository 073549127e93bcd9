"""Every cache and resume keys a model by its files' content (issue #27, defect 5): new weights
written at the same path (as `python -m core demo build` writes them) are never served the
results of the old ones, by DP fine-tuning, the canary audit or the domain reference; files left
as they are still resume and reuse."""

import dataclasses
import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from core.__main__ import main
from core.calibration import reference as domain_reference
from core.dp import canary_audit
from core.dp.finetune import tiny_config as finetune_tiny_config


def rewrite_weights(folder: str, *, keep_mtime: bool = False) -> None:
    """New random weights in ``folder``'s safetensors file, at the same path and size; with
    ``keep_mtime``, its modification time set back (as ``cp -p``, tar or ``rsync -t`` leave it)."""
    weights = Path(folder) / "model.safetensors"
    before = weights.stat()
    noise = torch.Generator().manual_seed(1234)
    tensors = {name: t + 0.5 * torch.randn(t.shape, generator=noise)
               for name, t in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    assert weights.stat().st_size == before.st_size
    if keep_mtime:
        os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))


def _dp_finetune(config, capsys) -> dict:
    argv = ["dp-finetune", "--model", config.model, "--corpus", *config.corpus, "--sigmas", "0",
            "--steps", "2", "--batch-size", "8", "--canary-repeats", "4", "--max-records", "200",
            "--block-size", "48", "--track-every", "1", "--checkpoint-every", "2",
            "--validation-texts", "20", "--device", "cpu", "--no-record", "--json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_dp_finetune_trains_again_on_rewritten_weights_and_reuses_unchanged_ones(capsys):
    config = finetune_tiny_config()
    first = _dp_finetune(config, capsys)
    rewrite_weights(config.model)
    second = _dp_finetune(config, capsys)
    (trained,) = second["runs"]
    assert trained["seconds"] > 0 and trained["resumed_from_step"] == 0  # not the old σ run
    assert second["run_hash"] != first["run_hash"]
    assert trained["points"][0]["secrecy_bits"] == second["base_secrecy_bits"]  # of these weights
    third = _dp_finetune(config, capsys)
    assert third["run_hash"] == second["run_hash"] and third["runs"][0]["seconds"] == 0
    assert third["runs"][0]["final_secrecy_bits"] == trained["final_secrecy_bits"]


def test_the_canary_audit_trains_again_on_rewritten_weights_and_resumes_unchanged_ones():
    config = dataclasses.replace(canary_audit.tiny_config(), sigma=0.0, steps=8)
    first = canary_audit.run(config)
    assert first.training.resumed_from_step == 0
    rewrite_weights(config.model)
    second = canary_audit.run(config)
    assert second.training.resumed_from_step == 0  # trained afresh, not the old run re-scored
    assert second.canaries[0].logp_start != first.canaries[0].logp_start
    third = canary_audit.run(config)
    assert third.training.resumed_from_step == 8
    assert [c.score for c in third.canaries] == [c.score for c in second.canaries]


def test_the_domain_reference_is_trained_again_for_rewritten_base_weights():
    config = domain_reference.tiny_config()
    first = domain_reference.run(config)
    rewrite_weights(config.base, keep_mtime=True)  # same path, size and modification time
    second = domain_reference.run(config)
    assert not second.cached and second.folder != first.folder
    assert second.heldout_loss_base != first.heldout_loss_base
    again = domain_reference.run(config)
    assert again.cached and again.folder == second.folder
