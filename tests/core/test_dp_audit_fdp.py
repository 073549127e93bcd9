"""The f-DP one-run audit (core/dp/audit_fdp.py; Mahloujifar, Melis & Chaudhuri, ICML 2025):
against google-deepmind/jax_privacy's own functions (golden values, tests/support/golden/make_fdp_audit.py),
at least as tight as the abstaining guesser and below the accountant on the n-gram Monte Carlo
through the CLI, and sound on Gaussian-DP canaries (the DP lab page's Gaussian-DP ε:
tests/core/test_dp_audit_ngram.py)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import get_sigma_gaussian
from scipy import optimize

from core.__main__ import main
from core.dp import audit, audit_bounds as ab, audit_fdp as af
from core.errors import UserError
from test_dp_audit import _gdp_epsilon   # Dong, Roth & Su's Cor. 2.13, solved by scipy

GOLDEN = json.loads((Path(__file__).parents[1] / "support" / "golden" / "fdp_audit.json").read_text())
NGRAM = ["dp-audit", "--ngram", "--q", "1", "--steps", "3", "--models", "2000", "--no-record",
         "--json"]


def _cli(argv: list[str], capsys) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", GOLDEN["counts"], ids=lambda c: f"{c['m']}-{c['r']}-{c['v']}")
def test_the_bound_of_r_guesses_with_v_right_is_jax_privacys(case):
    """To 2e-6: jax_privacy finds its root in ε to 1e-6 (up to 9.4e-7 off it on these cases)."""
    ours = af.fdp_epsilon(m=case["m"], r=case["r"], v=case["v"], delta=case["delta"],
                          beta=case["beta"])
    assert ours == pytest.approx(case["epsilon"], abs=2e-6)


@pytest.mark.parametrize("case", GOLDEN["counts"][::3], ids=lambda c: f"{c['m']}-{c['r']}-{c['v']}")
def test_the_root_sought_in_mu_is_the_root_in_epsilon(case):
    """The search in μ, turned into ε once, against a search in ε to 1e-12 that solves σ(ε, δ)
    at every step (dp_accounting's ``get_sigma_gaussian``), as jax_privacy does."""
    args = dict(m=case["m"], r=case["r"], v=case["v"], beta=case["beta"])

    def margin(epsilon):
        return af.fdp_margin(1 / get_sigma_gaussian(epsilon, case["delta"]), **args)

    if margin(0.0) <= 0:
        expected = 0.0
    else:
        high = 1.0
        while margin(high) > 0:
            high *= 2
        expected = optimize.brentq(margin, high / 2 if high > 1 else 0.0, high, xtol=1e-12)
    assert af.fdp_epsilon(delta=case["delta"], **args) == pytest.approx(expected, abs=1e-8)


def test_the_golden_cases_cover_twenty_inputs_and_positive_bounds():
    assert len(GOLDEN["counts"]) >= 20
    assert sum(c["epsilon"] > 0.5 for c in GOLDEN["counts"]) >= 12


@pytest.mark.parametrize("case", GOLDEN["scores"], ids=lambda c: f"seed{c['seed']}")
def test_the_split_median_audit_of_scores_is_jax_privacys_multisplit(case):
    """The whole strategy on the same scores and seed: splits, thresholds chosen on one part,
    the bound on the other, the median."""
    ours, audits = af.split_median_epsilon(case["inside"], case["outside"], delta=case["delta"],
                                           beta=case["beta"], splits=case["splits"],
                                           rng=np.random.default_rng(case["seed"]))
    assert ours == pytest.approx(case["epsilon"], abs=1e-6)
    assert len(audits) == case["splits"]


def test_on_the_ngram_monte_carlo_fdp_is_at_least_the_abstaining_guesser_and_below_the_accountant(
        capsys):
    """Issue #31: at every σ tried, through ``python -m core dp-audit --ngram`` (q = 1, so the
    training is exactly Gaussian DP and the accountant's ε bounds the Gaussian-DP ε)."""
    rows = []
    for sigma in ("0.5", "1", "2", "4", "8"):
        out = _cli([*NGRAM, "--sigma", sigma], capsys)
        fdp, one_run, upper = (out["epsilon_lower_fdp_one_run"], out["epsilon_lower_one_run"],
                               out["epsilon_upper"])
        rows.append((sigma, one_run, fdp, upper))
        assert one_run <= fdp <= upper, rows
        assert out["epsilon_lower"] == max(out[f"epsilon_lower_{m}"]
                                           for m in ("clopper_pearson", "one_run"))
    assert rows[0][2] > 1.5 * rows[0][1]   # σ = 0.5: clearly tighter, not only as tight
    print("\n".join(f"σ = {s}: one run {o:.2f}, f-DP one run {f:.2f}, accountant {u:.2f}"
                    for s, o, f, u in rows))


def test_the_split_median_strategy_runs_from_the_cli(capsys):
    out = _cli([*NGRAM, "--sigma", "1", "--method", "clopper_pearson", "bonferroni", "one_run",
                "fdp_one_run:split"], capsys)   # the old names, and the f-DP bound's split
    [fdp] = [b for b in out["bounds"] if b["method"] == "fdp_one_run:split"]
    assert 0 < fdp["epsilon_lower"] <= out["epsilon_upper"]
    assert fdp["tests"] == 2 and fdp["nonmember_threshold"] is None
    assert abs(fdp["canaries"] - 1000) <= 1   # the held-out half of each class


@pytest.mark.parametrize("mu", [1.0, 2.0])
def test_gaussian_dp_canaries_exceed_their_gaussian_epsilon_in_at_most_about_beta_of_audits(mu):
    """Members score N(μ, 1), non-members N(0, 1): exactly μ-GDP, whose (ε, δ) is the ε the
    f-DP audit bounds. Over many coin draws it may exceed it in ≈ β of them, and finds most
    of it."""
    delta, beta, runs = 1e-5, 0.2, 60
    true = _gdp_epsilon(mu, delta)
    found = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        members = rng.random(500) < 0.5
        scores = rng.normal(mu * members, 1.0)
        found.append(af.fdp_bound(scores, members, delta=delta, beta=beta,
                                  rng=np.random.default_rng([1, seed])).epsilon_lower)
    above = sum(f > true for f in found)
    assert above <= beta * runs + 2 * math.sqrt(runs * beta * (1 - beta)), (above, true)
    assert np.median(found) > 0.4 * true


def test_the_fdp_bound_is_never_below_steinkes_on_the_same_guesses():
    rng = np.random.default_rng(3)
    for _ in range(60):
        m = int(rng.choice([200, 1000, 5000]))
        r = int(rng.integers(1, m + 1))
        v = int(rng.integers(r // 2, r + 1))
        beta, delta = float(rng.choice([0.05 / 48, 0.01])), float(rng.choice([1e-5, 1e-6]))
        assert (af.fdp_epsilon(m=m, r=r, v=v, delta=delta, beta=beta)
                >= ab.one_run_epsilon(m=m, r=r, v=v, delta=delta, beta=beta)), (m, r, v)


def test_the_gaussian_epsilon_is_not_the_headline_and_cannot_stand_alone(tmp_path):
    """Randomised response is ε-DP but not Gaussian: the f-DP ε̂ passes its ε, so it stays out
    of the (ε, δ) headline, and choosing it alone is refused."""
    rng = np.random.default_rng(0)
    members = rng.random(4000) < 0.5
    right = rng.random(4000) < math.exp(2) / (1 + math.exp(2))
    result = audit.audit_scores(np.where(right, members, ~members).astype(float), members,
                                delta=1e-6)
    assert result.epsilon_lower_fdp_one_run > 2 > result.epsilon_lower
    assert result.best_method.startswith(("clopper_pearson:", "one_run:"))
    with pytest.raises(UserError, match="at least one method of the clopper_pearson or one_run "
                                        "bound"):
        audit.DpAuditConfig(scores=str(tmp_path / "x.csv"), methods=("fdp_one_run",))
