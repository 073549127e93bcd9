"""The canary auditor (core/dp/audit.py, audit_bounds.py, audit_ngram.py): Clopper–Pearson against
scipy's exact interval, the one-run bound against the paper's p-value computed directly, soundness
by simulation (randomised response, Gaussian DP, DP-SGD n-gram models), input validation, the
CLI's JSON and the renderer on the Runs page."""

import json
import math
import re
import threading

import numpy as np
import pytest
from scipy import optimize, stats

from core.__main__ import main
from core.dp import audit, audit_bounds as ab
from core.dp.audit_ngram import audit_ngram
from core.errors import UserError
from core.jobs import Store, run_now
from core.serialize import from_jsonable, to_jsonable
from pagetest import page_app

# the default methods: the (ε, δ) bounds of the headline, and the Gaussian-DP one beside it
METHODS = ("clopper_pearson:split", "clopper_pearson:bonferroni", "one_run:bonferroni")
ALL = (*METHODS, "fdp_one_run:bonferroni")
BOUNDS = ("clopper_pearson", "one_run", "fdp_one_run")   # each bound's best: epsilon_lower_BOUND


def _write(path, rows, header="score,member"):
    path.write_text(header + "\n" + "".join(f"{s},{m}\n" for s, m in rows), encoding="utf-8")
    return str(path)


def _gaussian_canaries(n, mu, seed):
    rng = np.random.default_rng(seed)
    members = rng.random(n) < 0.5
    return rng.normal(mu * members, 1.0), members


def _gdp_epsilon(mu, delta):
    """ε(δ) of μ-Gaussian DP (Dong, Roth & Su 2019, Cor. 2.13)."""
    gap = lambda e: (stats.norm.cdf(-e / mu + mu / 2)
                     - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta)
    return optimize.brentq(gap, 0.0, 100.0)


# ---------------------------------------------------------------- the statistics


@pytest.mark.parametrize("k, n", [(0, 20), (3, 20), (17, 20), (20, 20), (412, 1000)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    alpha = 0.025   # one side; the two-sided exact interval at 1 − 2α has each tail at α
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    assert ab.cp_lower(k, n, alpha) == pytest.approx(interval.low, abs=1e-12)
    assert ab.cp_upper(k, n, alpha) == pytest.approx(interval.high, abs=1e-12)


def test_epsilon_from_rates_takes_the_larger_ratio_and_never_goes_below_zero():
    assert ab.epsilon_from_rates(0.9, 0.1, 0.0) == pytest.approx(math.log(9))
    assert ab.epsilon_from_rates(0.5, 0.01, 0.0) == pytest.approx(math.log(50))
    assert ab.epsilon_from_rates(0.99, 0.5, 0.0) == pytest.approx(math.log(0.5 / 0.01))
    assert ab.epsilon_from_rates(0.9, 0.1, 0.05) == pytest.approx(math.log(0.85 / 0.1))
    assert ab.epsilon_from_rates(0.3, 0.6, 0.0) == 0.0


def test_held_out_bound_is_clopper_pearson_on_the_held_out_counts():
    scores, members = _gaussian_canaries(400, 1.5, seed=3)
    beta, delta = 0.05, 1e-5
    bound = audit.audit_scores(scores, members, delta=delta, methods=("clopper_pearson",),
                               seed=7).bounds[0]
    held = ~ab.stratified_half(members, np.random.default_rng([audit.AUDIT_STREAM, 7]))
    guess = scores[held] >= bound.threshold if bound.direction == "above" else \
        scores[held] <= bound.threshold
    tp, fp = int(np.sum(guess & members[held])), int(np.sum(guess & ~members[held]))
    assert (bound.true_positives, bound.false_positives, bound.canaries) == (tp, fp, held.sum())
    tpr = stats.binomtest(tp, int(members[held].sum())).proportion_ci(1 - beta, "exact").low
    fpr = stats.binomtest(fp, int((~members[held]).sum())).proportion_ci(1 - beta, "exact").high
    expected = max(math.log((tpr - delta) / fpr), math.log((1 - fpr - delta) / (1 - tpr)), 0)
    assert bound.epsilon_lower == pytest.approx(expected, rel=1e-9) and expected > 0.5


def _paper_p_value(m, r, v, eps, delta):
    """The p-value of Steinke et al. (2023), written out with scipy.stats.binom term by term."""
    q = math.exp(eps) / (1 + math.exp(eps))
    below = np.cumsum([stats.binom.pmf(v - i, r, q) for i in range(1, v + 1)])  # P[v−i ≤ B < v]
    return min(stats.binom.sf(v - 1, r, q) + 2 * m * delta * max(below / np.arange(1, v + 1)),
               1.0)


def test_one_run_p_value_and_bound_match_a_direct_computation():
    m, r, v, delta, beta = 1000, 100, 75, 1e-4, 0.05
    for eps in (0.0, 0.3, 0.673, 1.2):
        assert ab.one_run_p_value(m=m, r=r, v=v, epsilon=eps, delta=delta) == pytest.approx(
            _paper_p_value(m, r, v, eps, delta), rel=1e-9)
    bound = ab.one_run_epsilon(m=m, r=r, v=v, delta=delta, beta=beta)
    root = optimize.brentq(lambda e: _paper_p_value(m, r, v, e, delta) - beta, 0.0, 5.0)
    assert root == pytest.approx(0.673, abs=5e-4)   # the paper's App. D example
    assert root - ab.EPS_STEP <= bound <= root       # rounded down to the grid, never above
    pure = optimize.brentq(lambda e: stats.binom.sf(v - 1, r, stats.logistic.cdf(e)) - beta,
                           0.0, 5.0)                 # δ = 0: P[Binomial(r, e^ε/(1+e^ε)) ≥ v] = β
    assert ab.one_run_epsilon(m=m, r=r, v=v, delta=0.0, beta=beta) == pytest.approx(
        pure, abs=ab.EPS_STEP)
    assert ab.one_run_epsilon(m=m, r=r, v=50, delta=delta, beta=beta) == 0.0


# ---------------------------------------------------------------- soundness and power


@pytest.mark.parametrize("eps_true", [0.5, 2.0])
def test_bounds_exceed_the_true_epsilon_in_at_most_about_beta_of_runs(eps_true):
    """Randomised response: each canary's guess is right with probability e^ε/(1+e^ε), exactly
    ε-DP; over many coin draws a bound may exceed ε only in ≈ β of them."""
    runs, beta, exceeded = 100, 0.05, dict.fromkeys(METHODS, 0)
    right = math.exp(eps_true) / (1 + math.exp(eps_true))
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        members = rng.random(200) < 0.5
        scores = np.where(rng.random(200) < right, members, ~members).astype(float)
        for b in audit.audit_scores(scores, members, delta=1e-6, seed=seed).bounds:
            if b.method in exceeded:   # f-DP bounds a Gaussian-DP ε: not randomised response's
                exceeded[b.method] += b.epsilon_lower > eps_true
    allowed = beta * runs + 2 * math.sqrt(runs * beta * (1 - beta))
    assert all(count <= allowed for count in exceeded.values()), exceeded


def test_gaussian_dp_scores_are_bounded_by_their_true_epsilon_and_found():
    delta = 1e-5
    for mu in (1.0, 2.0):
        true = _gdp_epsilon(mu, delta)
        for seed in range(4):
            result = audit.audit_scores(*_gaussian_canaries(1000, mu, seed), delta=delta,
                                        seed=seed)
            assert all(0 <= b.epsilon_lower <= true for b in result.bounds)
            assert result.epsilon_lower > (0.6 if mu == 1.0 else 2.0)


def test_separated_scores_give_a_large_bound_that_grows_with_the_canaries():
    found = {}
    for n in (40, 100, 1000):
        members = np.arange(n) % 2 == 0
        found[n] = {b.method: b.epsilon_lower
                    for b in audit.audit_scores(members.astype(float), members).bounds}
    for method in ALL:   # each bound at 1 − β/4, so that the best holds at 1 − β
        assert 0.4 < found[40][method] < found[100][method] < found[1000][method]
    assert min(found[1000].values()) > 3.85   # Clopper–Pearson's at β/4: 3.887 (3.9 at β/3)


def test_scores_unrelated_to_membership_prove_nearly_nothing():
    for seed in range(5):
        rng = np.random.default_rng(seed)
        result = audit.audit_scores(rng.normal(size=1000), rng.random(1000) < 0.5, seed=seed)
        assert result.epsilon_lower <= 0.3


def test_ngram_dp_sgd_audit_stays_below_the_accountant():
    """One DP-SGD n-gram model per trial (q = 1): every bound at most the RDP accountant's ε,
    and clearly positive where the training is weakly private."""
    for sigma in (0.5, 2.0):
        for seed in range(2):
            result = audit_ngram(audit.DpAuditConfig(ngram=True, sigma=sigma, q=1.0, steps=3,
                                                     models=2000, seed=seed))
            assert all(b.epsilon_lower <= result.epsilon_upper for b in result.bounds)
            assert result.epsilon_gap == pytest.approx(result.epsilon_upper
                                                       - result.epsilon_lower)
            if sigma == 0.5:
                assert result.epsilon_lower > 3


def test_a_cancel_keeps_the_methods_finished():
    cancel = threading.Event()
    scores, members = _gaussian_canaries(100, 2.0, seed=0)
    result = audit.audit_scores(scores, members, progress=lambda *a, **k: cancel.set(),
                                cancel=cancel)
    assert result.stopped_early and [b.method for b in result.bounds] == ["clopper_pearson:split"]
    assert result.epsilon_lower_one_run is None


# ---------------------------------------------------------------- input, CLI, spec, renderer


@pytest.mark.parametrize("rows, header, message", [
    ([(1.0, "true")] * 12, "score,label", "no column member"),
    ([(1.0, "true"), ("abc", "false")] + [(0.5, "true")] * 10, "score,member",
     "row 3: score must be a finite number"),
    ([(1.0, "true"), ("nan", "false")] + [(0.5, "true")] * 10, "score,member",
     "row 3: score must be a finite number"),
    ([(1.0, "true"), (2.0, "")] + [(0.5, "false")] * 10, "score,member", "row 3: member is empty"),
    ([(1.0, "maybe")] + [(0.5, "false")] * 11, "score,member", "true or false"),
    ([(float(i), "true") for i in range(12)], "score,member", "all members"),
    ([(1.0, "true"), (0.0, "false")] * 4, "score,member", "from 10 to 100,000 canaries, got 8"),
])
def test_bad_score_files_are_refused_with_a_clear_message(tmp_path, rows, header, message):
    path = _write(tmp_path / "canaries.csv", rows, header)
    with pytest.raises(UserError, match=message):
        audit.run(audit.DpAuditConfig(scores=path))


@pytest.mark.parametrize("changes, message", [
    ({"delta": 0.0}, "above 0 and at most 0.1"),
    ({"confidence": 0.3}, "from 0.5 to 0.9999"),
    ({"methods": ()}, "at least one method"),
    ({"sigma": -1.0}, "0 or from 0.2 to 1,000, not -1"),
    ({"sigma": 0.001}, "0 or from 0.2 to 1,000, not 0.001"),
    ({"scores": " "}, "choose a file"),
])
def test_bad_settings_are_refused(changes, message):
    with pytest.raises(UserError, match=message):
        audit.DpAuditConfig(**{"scores": "canaries.csv"} | changes)


def test_jsonl_records_with_json_types_are_read(tmp_path):
    path = tmp_path / "canaries.jsonl"
    path.write_text("".join(json.dumps({"score": float(i), "member": i % 2 == 0}) + "\n"
                            for i in range(12)), encoding="utf-8")
    scores, members = audit.read_canaries(str(path))
    assert scores.tolist() == [float(i) for i in range(12)] and members.sum() == 6


@pytest.mark.parametrize("name, bad, message", [
    ("canaries.jsonl", '{"score": 1e999, "member": true}', "line 3: score must be a finite"),
    ("canaries.jsonl", '{"score": ' + "9" * 400 + ', "member": true}', "line 3: score must be"),
    ("canaries.jsonl", '{"score": -2e12, "member": true}', "line 3: score -2e+12 is beyond"),
    ("canaries.jsonl", '{"score": 1', "line 3 is not a JSON record"),
    ("canaries.jsonl", '[1, true]', "line 3 must be a record with score and member"),
    ("canaries.json", "", "give the scores as a .csv (with a header) or a .jsonl file"),
])
def test_jsonl_rows_are_checked_by_line(tmp_path, name, bad, message):
    good = [json.dumps({"score": float(i), "member": i % 2 == 0}) for i in range(12)]
    path = tmp_path / name
    path.write_text("\n".join([*good[:2], bad, *good[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=re.escape(message)):
        audit.read_canaries(str(path))


def test_absurd_scores_handed_over_as_arrays_are_refused():
    """±1e308 ended in numpy's "Too many bins for data range" when drawing the histogram."""
    scores, members = np.zeros(20), np.arange(20) % 2 == 0
    scores[:2] = 1e308, -1e308
    with pytest.raises(UserError, match=r"within ±1e\+12"):
        audit.audit_scores(scores, members)


def test_reading_stops_past_the_canaries_an_audit_takes(tmp_path):
    path = _write(tmp_path / "canaries.csv", [(0.5, "true"), (0.1, "false")] * 50_001)
    with pytest.raises(UserError, match="more than the 100,000 canaries"):
        audit.read_canaries(path)


def test_cli_json_names_each_bound_with_its_confidence(tmp_path, capsys):
    scores, members = _gaussian_canaries(300, 3.0, seed=1)
    path = _write(tmp_path / "canaries.csv", zip(scores, map(str, members)))
    assert main(["dp-audit", "--scores", path, "--delta", "1e-5", "--json", "--no-record"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(out[f"epsilon_lower_{b}"] > 1 for b in BOUNDS)
    assert [b["method"] for b in out["bounds"]] == list(ALL)
    assert [b["confidence"] for b in out["bounds"]] == pytest.approx([1 - 0.05 / 4] * 4)
    assert out["epsilon_lower_confidence"] == 0.95
    assert out["epsilon_lower"] == max(out[f"epsilon_lower_{b}"] for b in BOUNDS[:2])
    assert out["epsilon_upper"] is None
    assert main(["dp-audit", "--scores", path, "--method", "one_run", "--sigma", "1",
                 "--q", "1", "--steps", "4", "--json", "--no-record"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon_lower_clopper_pearson"] is None and out["epsilon_lower_one_run"] > 0
    assert out["epsilon_upper"] == pytest.approx(audit.accountant_epsilon(
        sigma=1.0, q=1.0, steps=4, delta=1e-5))
    assert main(["dp-audit", "--scores", path, "--delta", "0.5", "--json"]) == 2
    assert "above 0 and at most 0.1" in capsys.readouterr().err


def test_tiny_config_runs_round_trips_and_respects_its_accountant():
    result = audit.run(audit.tiny_config())
    assert 0 < result.epsilon_lower < result.epsilon_upper
    assert result.epsilon_lower_confidence == 0.95   # the best of 3 bounds, each at 1 − β/4
    assert sum(result.histogram.members) == result.members
    assert sum(result.histogram.nonmembers) == result.canaries - result.members
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert from_jsonable(audit.DpAuditResult, stored) == result
    assert set(audit.headline(result)) == {"epsilon_lower", "epsilon_upper", "epsilon_last_iterate",
                                           *(f"epsilon_lower_{b}" for b in BOUNDS)}


def test_runs_page_draws_the_bounds_the_histogram_and_the_plain_words_line():
    result = run_now(audit.SPEC, audit.tiny_config(), progress=lambda *a, **k: None)
    [run] = Store().runs("dp-audit")
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    table = at.get_by_key(f"run-{run.id}-bounds").dataframe[0].value
    assert list(table["ε ≥"]) == [round(b.epsilon_lower, 3) for b in result.bounds]
    line = (f"proves ε ≥ {result.epsilon_lower:.2f} at 95% confidence (the best of 3 bounds, "
            f"each at 98.8%), for δ = 1e-05; the accountant says ε ≤ {result.epsilon_upper:.2f}, "
            f"and the last-iterate heuristic ε ≈ {result.epsilon_last_iterate:.2f} (not a bound: "
            f"what audits of a final model have stayed below). The f-DP one-run audit proves a "
            f"Gaussian-DP ε ≥ "
            f"{result.epsilon_lower_fdp_one_run:.2f}")
    assert any(line in m.value for m in at.markdown)
    assert {m.label for m in at.metric} >= {"Audited ε (lower bound)", "Gap"}
