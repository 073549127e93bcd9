"""The last-iterate heuristic ε (core/bounds/last_iterate.py; Steinke et al., ICLR 2025): the
divergence against an independent quadrature and the ε against dp_accounting's mixture-of-Gaussians
PLD and its composed ε at T = 1 (golden values: tests/support/golden/make_last_iterate.py), at
q = 1, its shape in the steps, and where a user sees it (the bounds CLI, the Bound Explorer, the
DP auditor)."""

import json
import math
from pathlib import Path

import dp_accounting
import pytest

from core.__main__ import main
from core.bounds.last_iterate import last_iterate_epsilon, log_hockey_stick
from core.bounds.summary import summarize
from core.dp import audit
from pagetest import page_app

# dp_accounting's mixture-of-Gaussians PLD at six (σ, q, T), tens of seconds each, the
# divergence's quadrature and dp_accounting's composed ε: golden values
# (tests/support/golden/make_last_iterate.py writes them with the versions it ran)
GOLDEN = json.loads((Path(__file__).parents[1] / "support" / "golden" /
                     "last_iterate.json").read_text())
COMPOSED = {(c["sigma"], c["q"], c["steps"], c["delta"]): c["epsilon"] for c in GOLDEN["composed"]}


@pytest.mark.parametrize("case", GOLDEN["divergence"],
                         ids=lambda c: f"{c['epsilon']}-{c['sigma']}-{c['q']}-{c['steps']}")
def test_the_divergence_is_a_numerical_integral_of_its_definition(case):
    ours = math.exp(log_hockey_stick(case["epsilon"], sigma=case["sigma"], q=case["q"],
                                     steps=case["steps"]))
    assert ours == pytest.approx(case["divergence"], rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("case", GOLDEN["cases"],
                         ids=lambda c: f"{c['sigma']}-{c['q']}-{c['steps']}")
def test_the_epsilon_is_dp_accountings_mixture_of_gaussians(case):
    ours = last_iterate_epsilon(sigma=case["sigma"], q=case["q"], steps=case["steps"],
                                delta=case["delta"])
    assert ours == pytest.approx(case["epsilon"], rel=1e-3)


@pytest.mark.parametrize("sigma, q", [(1.0, 0.01), (0.5, 0.1), (2.0, 0.001)])
def test_one_step_is_the_composed_epsilon_and_below_the_rdp_one(sigma, q):
    ours = last_iterate_epsilon(sigma=sigma, q=q, steps=1, delta=1e-5)
    assert ours == pytest.approx(COMPOSED[sigma, q, 1, 1e-5], rel=2e-3)
    assert ours <= audit.accountant_epsilon(sigma=sigma, q=q, steps=1, delta=1e-5)


def test_full_batches_are_the_gaussian_mechanisms_epsilon_at_every_step_count():
    for steps in (1, 3, 100):
        assert last_iterate_epsilon(sigma=1.0, q=1.0, steps=steps, delta=1e-6) == pytest.approx(
            dp_accounting.get_epsilon_gaussian(1.0 / math.sqrt(steps), 1e-6), rel=1e-6)


@pytest.mark.parametrize("sigma, q", [(2.0, 0.01), (1.0, 0.01), (0.5, 0.01), (1.0, 0.001)])
def test_it_grows_with_the_steps_past_one_epoch_and_stays_below_the_composed_epsilon(sigma, q):
    epochs = [int(e / q) for e in (1, 2, 5, 10, 50)]
    heuristic = [last_iterate_epsilon(sigma=sigma, q=q, steps=t, delta=1e-5) for t in epochs]
    assert all(a < b for a, b in zip(heuristic, heuristic[1:])), heuristic
    composed = COMPOSED[sigma, q, epochs[3], 1e-5]      # ten epochs: below the tight composed ε
    assert heuristic[3] < (0.95 if sigma == 2.0 else 0.8) * composed
    assert heuristic[-1] < audit.accountant_epsilon(sigma=sigma, q=q, steps=epochs[-1],
                                                    delta=1e-5)


def test_at_large_sigma_it_grows_from_the_first_step_but_at_small_sigma_it_first_falls():
    """σ = 2, q = 0.01: monotone from T = 1. σ = 0.5: one step is a rare, large shift, which the
    noise of ten steps (σ√10) hides better (dp_accounting's mixture PLD agrees)."""
    grid = (1, 2, 5, 10, 20, 50, 100)
    large = [last_iterate_epsilon(sigma=2.0, q=0.01, steps=t, delta=1e-5) for t in grid]
    assert all(a < b for a, b in zip(large, large[1:])), large
    first, tenth = (last_iterate_epsilon(sigma=0.5, q=0.01, steps=t, delta=1e-5) for t in (1, 10))
    assert first > 3 > 1 > tenth   # both checked against the mixture PLD above


def test_the_bounds_cli_prints_it_beside_the_composed_epsilon(capsys):
    assert main(["bounds", "--sigma", "1", "--q", "0.01", "--steps", "1000", "--bits", "8",
                 "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon_last_iterate"] == pytest.approx(
        last_iterate_epsilon(sigma=1.0, q=0.01, steps=1000, delta=1e-5))
    assert out["epsilon_last_iterate"] < out["epsilon"]


def test_the_bound_explorer_shows_it_labelled_as_a_heuristic():
    at = page_app("app_pages/bound_explorer.py").run()
    assert not at.exception and not at.error
    [metric] = [m for m in at.metric if m.label == "Last-iterate ε (heuristic)"]
    expected = summarize(sigma=0.6, q=2.81e-4, steps=186_000, bits=40, delta=3e-7)
    assert metric.value == f"{expected.epsilon_last_iterate:.3g}"
    assert "not a guarantee" in metric.help
    assert float(metric.value) < expected.epsilon


def test_the_dp_auditor_sets_it_beside_the_accountant(capsys):
    assert main(["dp-audit", "--ngram", "--sigma", "2", "--q", "1", "--steps", "3", "--models",
                 "500", "--no-record", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon_last_iterate"] == pytest.approx(   # q = 1: the Gaussian mechanism's
        dp_accounting.get_epsilon_gaussian(2.0 / math.sqrt(3), 1e-5), rel=1e-6)
    assert out["epsilon_lower"] <= out["epsilon_last_iterate"] <= out["epsilon_upper"]


def test_the_dp_canary_audit_sets_it_beside_the_composed_and_audited_epsilons():
    from core.dp import canary_audit as ca

    result = ca.run(ca.tiny_config())   # σ = 1, 40 steps, one record per canary
    assert result.audit.epsilon_last_iterate == pytest.approx(last_iterate_epsilon(
        sigma=1.0, q=result.q, steps=40, delta=result.config.delta))
    assert result.audit.epsilon_last_iterate < result.epsilon_upper
    assert result.audit.epsilon_lower_fdp_one_run >= result.audit.epsilon_lower_one_run
