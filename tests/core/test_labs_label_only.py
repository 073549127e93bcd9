"""Label-only membership inference lab on a digits MLP (CPU, fixed seeds)."""

import json

import numpy as np
import pytest

from core.__main__ import main
from core.errors import UserError
from core.labs.label_only_mi import LabelOnlyConfig, LabelOnlyResult, best_threshold, run, shifted
from core.serialize import from_jsonable, to_jsonable

SMALL = dict(n_members=60, hidden=32, epochs=20, n_seeds=1, noise_queries=10, directions=2)


def _by_attack(result):
    return {a.attack: a for a in result.attacks}


def test_noise_robustness_beats_the_gap_attack_over_seeds():
    result = run(LabelOnlyConfig(n_members=100, epochs=40, n_seeds=3, directions=1, noise_queries=20))
    attacks = _by_attack(result)
    gap, noise = attacks["gap"], attacks["noise robustness"]
    assert result.train_accuracy == 1.0 and result.test_accuracy < 0.95
    assert noise.accuracy_mean >= gap.accuracy_mean + 0.04
    assert noise.auroc_mean >= gap.auroc_mean + 0.05
    assert len(noise.accuracies) == 3 and noise.accuracy_ci > 0
    # the gap attack's accuracy is 1/2 + (train acc - test acc) / 2 at its natural threshold
    assert gap.accuracy_mean == pytest.approx(0.5 + (result.train_accuracy - result.test_accuracy) / 2,
                                              abs=0.02)


def test_labels_only_hurts_the_confidence_attack_but_not_the_label_only_ones():
    full = _by_attack(run(LabelOnlyConfig(**SMALL)))
    labels = _by_attack(run(LabelOnlyConfig(**SMALL, labels_only=True)))
    assert full["confidence vector"].auroc_mean > full["gap"].auroc_mean
    assert labels["confidence vector"].auroc_mean == pytest.approx(labels["gap"].auroc_mean)
    for attack in ("gap", "augmentation", "noise robustness", "boundary distance"):
        assert labels[attack].accuracies == full[attack].accuracies


def test_dp_sgd_trains_with_opacus_and_reports_epsilon():
    result = run(LabelOnlyConfig(**{**SMALL, "epochs": 10}, dp_sgd=True, noise_multiplier=1.0))
    assert 5 < result.epsilon < 30
    assert result.test_accuracy > 0.2  # chance is 0.1
    assert all(0 <= a.accuracy_mean <= 1 for a in result.attacks)


def test_shifts_move_pixels_and_fill_with_zeros():
    x = np.arange(64, dtype=float).reshape(1, 64) + 1
    right = shifted(x, 0, 1).reshape(8, 8)
    assert np.all(right[:, 0] == 0) and np.all(right[:, 1:] == x.reshape(8, 8)[:, :-1])
    up = shifted(x, -2, 0).reshape(8, 8)
    assert np.all(up[-2:] == 0) and np.all(up[:-2] == x.reshape(8, 8)[2:])


def test_threshold_separates_the_shadow_scores():
    assert best_threshold(np.array([0.8, 0.9, 1.0]), np.array([0.1, 0.2, 0.85])) == 0.8
    assert best_threshold(np.array([1.0, 1.0]), np.array([0.0, 1.0])) == 1.0


@pytest.mark.parametrize("changes, message", [
    (dict(n_members=1000), "members per model must be from 10 to 449, not 1,000"),
    (dict(noise_sigma=0.0), "noise σ must be above 0 and at most 5, not 0"),
    (dict(noise_multiplier=0.0), "noise multiplier must be above 0 and at most 100, not 0"),
    (dict(n_seeds=0), r"seeds \(target/shadow pairs\) must be from 1 to 20, not 0")])
def test_bad_configs_say_what_is_wrong(changes, message):
    with pytest.raises(UserError, match=message):
        LabelOnlyConfig(**changes)


def test_result_round_trips_through_json():
    result = run(LabelOnlyConfig(n_members=20, hidden=16, epochs=2, n_seeds=1, noise_queries=2,
                                 directions=1))
    assert result.epsilon is None
    assert from_jsonable(LabelOnlyResult, to_jsonable(result)) == result


def test_cli_runs_the_lab(capsys):
    assert main(["label-only-mi", "--tiny", "--labels-only", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [a["attack"] for a in out["attacks"]][0] == "gap"
    assert out["epsilon"] is None  # no DP-SGD
    assert main(["lab", "label-only-mi", "--n-members", "5"]) == 2
