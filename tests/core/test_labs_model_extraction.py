"""Model extraction lab: Rolnick & Kording's reverse-engineering of a ReLU network (CPU, fixed seeds)."""

import json

import numpy as np
import pytest

from core.__main__ import main
from core.errors import UserError
from core.labs.model_extraction import (BlackBox, ModelExtractionConfig, ModelExtractionResult,
                                        find_bends, plane_lines, run)
from core.serialize import from_jsonable, to_jsonable


def test_meets_the_bar_for_64_hidden_neurons():
    result = run(ModelExtractionConfig(hidden=64, n_lines=4))
    assert result.neurons_found == 64
    assert result.max_rel_error < 1e-4
    assert result.bits_of_precision > 13
    assert result.label_agreement == 1.0
    assert result.max_logit_error < 1e-3
    assert result.queries <= ModelExtractionConfig().query_budget
    assert not result.budget_exhausted and not result.notes


def test_bends_on_a_line_are_the_hyperplane_crossings():
    rng = np.random.default_rng(3)
    w1, b1 = rng.standard_normal((6, 64)), rng.standard_normal(6)
    w2, b2 = rng.standard_normal((10, 6)), rng.standard_normal(10)
    box = BlackBox(w1, b1, w2, b2, budget=10**6)
    start, direction = rng.standard_normal(64), rng.standard_normal(64)
    direction /= np.linalg.norm(direction)
    crossings = -(w1 @ start + b1) / (w1 @ direction)
    expected = np.sort(crossings[np.abs(crossings) < 100])
    bends = find_bends(box, start, direction, rng.standard_normal(10))
    np.testing.assert_allclose(bends, expected, rtol=0, atol=1e-7)
    assert box.queries > 0


def test_rounding_defence_stops_the_attack():
    clean = run(ModelExtractionConfig(hidden=16, n_lines=2, train_epochs=5))
    rounded = run(ModelExtractionConfig(hidden=16, n_lines=2, train_epochs=5,
                                        round_outputs=True, decimals=2, query_budget=20_000))
    assert clean.neurons_found == 16 and clean.label_agreement == 1.0
    assert rounded.neurons_found < 8
    assert rounded.label_agreement < 0.9


def test_query_budget_is_enforced():
    result = run(ModelExtractionConfig(hidden=16, n_lines=2, train_epochs=5, query_budget=1_000))
    assert result.budget_exhausted and result.queries <= 1_000
    assert "budget" in result.notes[0]


def test_plane_lines_put_true_and_recovered_boundaries_together():
    result = run(ModelExtractionConfig(hidden=8, n_lines=1, train_epochs=2))
    true_lines = plane_lines(result.true_rows)
    recovered = plane_lines(result.recovered_rows)
    for row in result.neurons:
        if row.found:
            np.testing.assert_allclose(recovered[row.recovered_index], true_lines[row.neuron],
                                       atol=1e-5)


@pytest.mark.parametrize("changes, message", [
    (dict(hidden=0), "hidden width H must be from 1 to 512, not 0"),
    (dict(n_lines=0), "random lines must be from 1 to 64, not 0"),
    (dict(query_budget=10), "query budget must be from 1,000 to 100,000,000, not 10"),
    (dict(decimals=20), "decimals kept must be from 0 to 12, not 20")])
def test_bad_configs_say_what_is_wrong(changes, message):
    with pytest.raises(UserError, match=message):
        ModelExtractionConfig(**changes)


def test_result_round_trips_through_json():
    result = run(ModelExtractionConfig(hidden=6, n_lines=1, train_epochs=2))
    assert from_jsonable(ModelExtractionResult, to_jsonable(result)) == result


def test_cli_runs_the_lab(capsys):
    assert main(["model-extraction", "--tiny", "--hidden", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["neurons_true"] == 6 and out["neurons_found"] == 6
    assert main(["lab", "model-extraction", "--hidden", "-3"]) == 2
