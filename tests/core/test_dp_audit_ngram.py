"""The canary auditor on the n-gram Monte Carlo through its spec (``dp-audit --ngram``, run as a
user runs it: the CLI, recorded), the DP guide's figure measured by that very command, and the
headline bound at the confidence asked (the best of the methods, each at 1 − β/M)."""

import json
import math

import numpy as np
import pytest

from figures import dp_figures
from core.__main__ import main
from core.dp import audit, audit_bounds as ab
from core.jobs import Store
from pagetest import page_app, wait_for_run

NGRAM = ["dp-audit", "--ngram", "--q", "1", "--steps", "3", "--models", "2000"]


def _cli(argv: list[str], capsys) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- dp-audit --ngram


def test_the_ngram_audit_runs_from_the_cli_below_its_accountant(capsys):
    """One DP-SGD n-gram model per trial (q = 1): the audited ε is at most the accountant's,
    and clearly positive where the training is weakly private (σ = 0.5)."""
    for sigma in ("0.5", "4"):
        out = _cli([*NGRAM, "--sigma", sigma], capsys)
        assert 0 <= out["epsilon_lower"] <= out["epsilon_upper"]
        assert out["epsilon_lower"] > 3 or sigma == "4"
        assert out["epsilon_upper"] == pytest.approx(audit.accountant_epsilon(
            sigma=float(sigma), q=1.0, steps=3, delta=1e-5))
        assert out["canaries"] == 2000 and 900 < out["members"] < 1100
        assert out["trials"] == {"sigma": float(sigma), "steps": 3, "models": 2000,
                                 "digits": 10, "symbols": 10}
    assert [run.status for run in Store().runs("dp-audit")] == ["done", "done"]  # recorded


@pytest.mark.parametrize("extra, message", [
    (["--sigma", "0"], "σ must be from 0.2 to 1,000"),
    (["--sigma", "1", "--scores", "canaries.csv"], "give no scores file"),
    (["--sigma", "1", "--q", "0.01"], "q must be 1"),
])
def test_bad_ngram_settings_are_refused_in_one_line(extra, message, capsys, tmp_path):
    argv = [w.replace("canaries.csv", str(tmp_path / "canaries.csv")) for w in [*NGRAM, *extra]]
    (tmp_path / "canaries.csv").write_text("score,member\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_runs_page_says_what_the_trials_were(capsys):
    out = _cli([*NGRAM, "--sigma", "1"], capsys)
    [run] = Store().runs("dp-audit")
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    assert any("2,000 n-gram models" in m.value and "σ = 1, q = 1, 3 steps" in m.value
               for m in at.markdown)
    assert any(f"the accountant says ε ≤ {out['epsilon_upper']:.2f}" in m.value
               for m in at.markdown)


def test_the_dp_lab_page_runs_the_ngram_audit_and_checks_its_sigma():
    at = page_app("app_pages/dp_lab.py").run()
    at.toggle(key="audit-ngram").set_value(True).run()
    assert not at.exception and not at.error and not at.button(key="audit-run").disabled
    at.number_input(key="audit-ng-sigma").set_value(0.1).run()
    assert at.button(key="audit-run").disabled
    assert any("from 0.2 to 1,000" in e.value for e in at.error)
    at.number_input(key="audit-ng-sigma").set_value(1.0)
    at.number_input(key="audit-ng-models").set_value(1000).run()
    at.button(key="audit-run").click().run()
    run = wait_for_run("dp-audit", timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    assert any("1,000 n-gram models" in m.value for m in at.markdown)
    assert 0 < run.result["epsilon_lower"] <= run.result["epsilon_upper"]
    # the f-DP one-run audit's Gaussian-DP ε beside the audited one (Mahloujifar et al. 2025)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gaussian-DP ε (f-DP one run)"] == (
        f"{run.result['epsilon_lower_fdp_one_run']:.2f}")
    assert metrics["Audited ε (lower bound)"] == f"{run.result['epsilon_lower']:.2f}"
    assert any("f-DP one-run audit proves a Gaussian-DP ε" in m.value for m in at.markdown)


def test_the_guides_figure_is_measured_by_the_command_it_shows(monkeypatch, capsys):
    monkeypatch.setattr(dp_figures, "NGRAM_SIGMAS", (1.0,))
    monkeypatch.setattr(dp_figures, "NGRAM_MODELS", 400)
    figures = dp_figures.measure_ngram()
    command = dp_figures.ngram_command("1", dp_figures.NGRAM_STEPS, 400)
    out = _cli(command[3:], capsys)   # what `python -m core ...` prints
    assert figures["rows"] == [{"sigma": 1.0, "lower": round(out["epsilon_lower"], 2),
                                "method": out["best_method"],
                                "upper": round(out["epsilon_upper"], 2)}]
    shown = dp_figures.markdown_ngram(figures)
    assert "python -m core dp-audit --ngram --sigma S --q 1 --steps 3 --models 400" in shown
    assert "95%" in shown and "per bound" not in shown


# ---------------------------------------------------------------- the headline's confidence


def _randomised_response(eps: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each canary's guess is right with probability e^ε/(1 + e^ε): exactly ε-DP."""
    rng = np.random.default_rng(seed)
    members = rng.random(n) < 0.5
    right = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    return np.where(right, members, ~members).astype(float), members


def test_the_headline_is_the_best_of_bounds_each_at_its_share_of_beta(tmp_path, capsys):
    """Issue #32 item 10: the best of three 95% bounds holds only at 85% (union bound), yet the
    form asked for 95%. Each of the 4 methods now runs at 1 − β/4, so the headline holds at
    1 − β."""
    scores, members = _randomised_response(2.0, 600, seed=0)
    path = tmp_path / "canaries.csv"
    path.write_text("score,member\n" + "".join(f"{s},{str(m).lower()}\n"
                                              for s, m in zip(scores, members)))
    out = _cli(["dp-audit", "--scores", str(path), "--confidence", "0.9", "--delta", "1e-6"],
               capsys)
    assert out["epsilon_lower_confidence"] == pytest.approx(0.9)
    assert [b["confidence"] for b in out["bounds"]] == pytest.approx([1 - 0.1 / 4] * 4)
    rng = np.random.default_rng([audit.AUDIT_STREAM, 0])
    one_run = ab.one_run_bound(scores, members, delta=1e-6, beta=0.1 / 4, rng=rng)
    assert out["epsilon_lower_one_run"] == one_run.epsilon_lower > 0


@pytest.mark.parametrize("confidence", [0.5, 0.8])
def test_the_headline_exceeds_the_true_epsilon_in_at_most_one_minus_the_confidence(confidence):
    """Over many audits of an exactly ε-DP mechanism (randomised response, ε = 1: the
    Clopper–Pearson bounds are nearly tight there), the headline lies above the true ε(δ) in at
    most 1 − c of them (binomial tolerance), and says it holds at c."""
    eps, delta, runs = 1.0, 1e-6, 120
    right = math.exp(eps) / (1 + math.exp(eps))
    true = math.log((right - delta) / (1 - right))   # ε(δ) of randomised response
    above = 0
    for seed in range(runs):
        result = audit.audit_scores(*_randomised_response(eps, 200, seed), delta=delta,
                                    confidence=confidence, seed=seed)
        assert result.epsilon_lower_confidence == confidence
        above += result.epsilon_lower > true
    beta = 1 - confidence
    assert above <= beta * runs + 2 * math.sqrt(runs * beta * (1 - beta)), above
