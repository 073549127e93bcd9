"""Gradient leakage lab: DLG / cosine gradient matching on the digits (CPU, fixed seeds)."""

import json

import numpy as np
import pytest
import torch

from core.__main__ import main
from core.errors import UserError
from core.labs.gradient_leakage import GradientLeakageConfig, GradientLeakageResult, defend, run
from core.serialize import from_jsonable, to_jsonable


def test_batch_of_one_is_reconstructed_without_defence():
    result = run(GradientLeakageConfig(batch_size=1, iterations=10))
    assert result.mse < 1e-3
    assert result.label_accuracy == 1.0
    assert result.history[0]["mse"] > result.history[-1]["mse"]
    assert result.snapshots[-1].iteration == 10 and len(result.snapshots) >= 3


def test_cosine_objective_also_leaks_the_image():
    result = run(GradientLeakageConfig(batch_size=1, objective="cosine", iterations=10))
    assert result.mse < 0.01


def test_pruning_90_percent_defends():
    result = run(GradientLeakageConfig(batch_size=1, prune_percent=90, iterations=5))
    assert result.mse > 0.05


def test_gradient_noise_defends():
    result = run(GradientLeakageConfig(batch_size=1, noise_std=1e-2, iterations=5))
    assert result.mse > 0.05


def test_batch_size_limit_is_visible():
    small = run(GradientLeakageConfig(batch_size=2, iterations=10))
    large = run(GradientLeakageConfig(batch_size=8, iterations=10))
    assert small.mse < 1e-3
    assert large.mse > 0.05
    assert len(large.originals) == len(large.reconstructions) == 8


def test_defend_prunes_the_smallest_entries_and_adds_noise():
    grads = [torch.arange(1.0, 11.0), -torch.arange(11.0, 21.0)]
    generator = torch.Generator().manual_seed(0)
    pruned = defend(grads, noise_std=0.0, prune_percent=90, generator=generator)
    assert torch.count_nonzero(torch.cat(pruned)) == 2
    assert pruned[1][-1] == -20 and pruned[1][-2] == -19
    noisy = defend(grads, noise_std=1.0, prune_percent=0, generator=generator)
    assert not torch.equal(noisy[0], grads[0])


@pytest.mark.parametrize("changes, message", [
    (dict(batch_size=0), "batch size must be from 1 to 64, not 0"),
    (dict(prune_percent=100), r"defence: prune the smallest gradients \(%\) must be at least 0 "
                              "and below 100, not 100"),
    (dict(noise_std=-1.0), "defence: Gaussian noise σ on the gradient must be from 0 to 10, "
                           "not -1"),
    (dict(iterations=0), "L-BFGS iterations must be from 1 to 1,000, not 0"),
    (dict(sweep_batch_sizes=(2, 65)), "sweep batch sizes must be from 1 to 64, not 65")])
def test_bad_configs_say_what_is_wrong(changes, message):
    with pytest.raises(UserError, match=message):
        GradientLeakageConfig(**changes)


def test_sweep_attacks_each_batch_size_with_the_same_knobs():
    result = run(GradientLeakageConfig(batch_size=1, iterations=2, sweep_batch_sizes=(1, 2)))
    assert [p.batch_size for p in result.sweep] == [1, 2]
    assert result.sweep[0].mse == pytest.approx(result.mse)
    assert from_jsonable(GradientLeakageResult, to_jsonable(result)) == result


def test_cli_runs_the_lab(capsys):
    assert main(["gradient-leakage", "--tiny", "--objective", "cosine", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.array(out["reconstructions"]).shape == (1, 8, 8)
    assert main(["lab", "gradient-leakage", "--tiny", "--sweep-batch-sizes", "1,2", "--json"]) == 0
    assert [p["batch_size"] for p in json.loads(capsys.readouterr().out)["sweep"]] == [1, 2]
    with pytest.raises(SystemExit) as exit_:
        main(["gradient-leakage", "--objective", "l1"])
    assert exit_.value.code == 2
