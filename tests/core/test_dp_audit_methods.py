"""Issue #42, item 5: a DP-audit method is a bound and a threshold strategy (split, Bonferroni,
explicit), as jax_privacy's auditing keeps them apart. The explicit threshold against scipy's
exact interval and the one-run p-value computed here; every new method sound on randomised
response; the old names read; the CLI (the DP lab's form: tests/pages/test_page_dp_lab.py)."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from core.__main__ import main
from core.dp import audit, audit_bounds as ab
from core.dp.audit_methods import canonical_methods
from core.dp.audit_scores import write_canaries
from core.errors import UserError
from core.jobs import Store, load_result

NEW = ("clopper_pearson:explicit", "one_run:split", "one_run:explicit")


def _canaries(n=400, shift=2.0, seed=0):
    rng = np.random.default_rng(seed)
    members = rng.random(n) < 0.5
    return rng.normal(shift * members, 1.0), members


def _one_run_p(m, r, v, eps, delta):
    """Steinke et al.'s p-value (their Appendix D), summed term by term from scipy's pmf."""
    q = math.exp(eps) / (1 + math.exp(eps))
    tail = stats.binom.sf(v - 1, r, q)
    spread = max((stats.binom.sf(v - i - 1, r, q) - tail) / i for i in range(1, v + 1))
    return min(tail + 2 * m * delta * spread, 1.0)


def test_the_explicit_clopper_pearson_bound_is_scipys_exact_interval_at_the_threshold():
    scores, members = _canaries()
    beta, delta, tau = 0.05, 1e-5, 1.2
    [bound] = audit.audit_scores(scores, members, delta=delta, confidence=1 - beta,
                                 methods=("clopper_pearson:explicit",), threshold=tau).bounds
    guess = scores >= tau
    tp, fp = int(np.sum(guess & members)), int(np.sum(guess & ~members))
    tpr = stats.binomtest(tp, members.sum()).proportion_ci(1 - beta, method="exact").low
    fpr = stats.binomtest(fp, (~members).sum()).proportion_ci(1 - beta, method="exact").high
    expected = max(math.log((tpr - delta) / fpr), math.log((1 - fpr - delta) / (1 - tpr)), 0)
    assert (bound.true_positives, bound.false_positives, bound.tests) == (tp, fp, 1)
    assert bound.epsilon_lower == pytest.approx(expected, abs=1e-9) and expected > 1


def test_the_explicit_one_run_bound_rejects_below_it_and_not_a_step_above():
    scores, members = _canaries(1000, 3.0, seed=1)
    beta, delta, tau = 0.05, 1e-6, 2.0
    [bound] = audit.audit_scores(scores, members, delta=delta, confidence=1 - beta,
                                 methods=("one_run:explicit",), threshold=tau).bounds
    guessed = scores >= tau
    r, v = int(guessed.sum()), int(np.sum(guessed & members))
    assert (bound.true_positives, bound.false_positives, bound.true_negatives) == (v, r - v, 0)
    eps = bound.epsilon_lower
    assert eps > 1 and _one_run_p(1000, r, v, eps, delta) <= beta
    assert _one_run_p(1000, r, v, eps + 2 * ab.EPS_STEP, delta) > beta


def test_the_split_one_run_bound_audits_the_held_out_half_at_the_cuts_chosen_on_the_other():
    scores, members = _canaries(600, 2.5, seed=2)
    [bound] = audit.audit_scores(scores, members, methods=("one_run:split",), seed=3).bounds
    held = ~ab.stratified_half(members, np.random.default_rng([audit.AUDIT_STREAM, 3]))
    member_guess = scores[held] >= bound.threshold
    assert bound.canaries == held.sum() and bound.tests == 1
    assert bound.true_positives == int(np.sum(member_guess & members[held]))
    assert 0 < bound.epsilon_lower <= audit.audit_scores(
        scores, members, methods=("one_run:bonferroni",)).epsilon_lower + 1.0


@pytest.mark.parametrize("method", NEW)
def test_every_new_method_exceeds_randomised_responses_epsilon_in_about_beta_of_runs(method):
    eps_true, runs, beta = 1.0, 100, 0.05
    right = math.exp(eps_true) / (1 + math.exp(eps_true))
    exceeded = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        members = rng.random(200) < 0.5
        scores = np.where(rng.random(200) < right, members, ~members).astype(float)
        result = audit.audit_scores(scores, members, delta=1e-6, methods=(method,), seed=seed,
                                    threshold=0.5 if method.endswith("explicit") else None,
                                    confidence=1 - beta)
        exceeded += result.epsilon_lower > eps_true
    assert exceeded <= beta * runs + 2 * math.sqrt(runs * beta * (1 - beta))


def test_the_old_names_are_read_and_a_threshold_goes_with_an_explicit_method():
    assert canonical_methods(("clopper_pearson", "bonferroni", "one_run", "fdp_one_run",
                              "one_run:bonferroni")) == audit.DEFAULT_METHODS
    config = audit.DpAuditConfig(scores="x.csv", methods=("one_run", "one_run:explicit"),
                                 threshold=0.5)
    assert config.methods == ("one_run:bonferroni", "one_run:explicit")
    with pytest.raises(UserError, match="one_run:explicit needs the threshold"):
        audit.DpAuditConfig(scores="x.csv", methods=("one_run:explicit",))
    with pytest.raises(UserError, match="used by the explicit methods only"):
        audit.DpAuditConfig(scores="x.csv", threshold=1.0)


def test_the_cli_takes_an_explicit_threshold(tmp_path, capsys):
    path = write_canaries(tmp_path / "canaries.csv", *_canaries())
    assert main(["dp-audit", "--scores", str(path), "--method", "clopper_pearson",
                 "one_run:explicit", "--threshold", "1.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [run] = Store().runs("dp-audit")   # recorded as a user's run is, with its config
    assert run.params["threshold"] == 1.5 and load_result(run).bounds[1].method == out[
        "bounds"][1]["method"]
    assert [b["method"] for b in out["bounds"]] == ["clopper_pearson:split", "one_run:explicit"]
    assert out["bounds"][1]["threshold"] == 1.5 and out["bounds"][1]["tests"] == 1
    assert main(["dp-audit", "--scores", str(path), "--method", "one_run:explicit",
                 "--json"]) == 2
    assert "needs the threshold" in capsys.readouterr().err
