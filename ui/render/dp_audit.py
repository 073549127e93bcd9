"""Renderer of a canary audit: the lower bounds on ε with their confidence, the scores of members
and non-members with the thresholds the bounds chose, the audit beside the accountant's ε, and
the trials when the auditor trained them (n-gram models)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.dp.audit import DpAuditResult
from core.dp.audit_methods import GAUSSIAN_BOUNDS, bound_name, threshold_name

BOUND_NAMES = {"clopper_pearson": "Clopper–Pearson",
               "one_run": "One run (Steinke et al. 2023)",
               "fdp_one_run": "f-DP one run, Gaussian ε (Mahloujifar et al. 2025)"}
THRESHOLD_NAMES = {"split": "chosen on a held-out half", "bonferroni": "every threshold at once",
                   "explicit": "the threshold given"}


def method_words(method: str) -> str:
    """A method (old names too) in words: its bound, and how its threshold was picked."""
    return f"{BOUND_NAMES[bound_name(method)]}, {THRESHOLD_NAMES[threshold_name(method)]}"
COLORS = {"members": "#d62728", "non-members": "#1f77b4"}


def summary_line(result: DpAuditResult) -> str:
    """The audit in plain words: what the attack proves, and what the accountant says."""
    counted = [b for b in result.bounds if bound_name(b.method) not in GAUSSIAN_BOUNDS]
    each = ("" if len(result.bounds) < 2 else
            f" (one bound, at {result.confidence:.1%}: β is shared with the f-DP audit)"
            if len(counted) < 2
            else f" (the best of {len(counted)} bounds, each at {result.confidence:.1%})")
    proven = (f"proves ε ≥ {result.epsilon_lower:.2f}" if result.epsilon_lower > 0
              else "proves no ε above 0")
    line = (f"An attack on these {result.canaries:,} canaries {proven} at "
            f"{result.epsilon_lower_confidence:.0%} confidence{each}, for δ = {result.delta:g}")
    if result.epsilon_upper is not None:
        line += f"; the accountant says ε ≤ {result.epsilon_upper:.2f}"
    if result.epsilon_last_iterate is not None:
        line += (f", and the last-iterate heuristic ε ≈ {result.epsilon_last_iterate:.2f} (not a "
                 "bound: what audits of a final model have stayed below)")
    if result.epsilon_lower_fdp_one_run is not None:
        line += (f". The f-DP one-run audit proves a Gaussian-DP ε ≥ "
                 f"{result.epsilon_lower_fdp_one_run:.2f} (the run is not Gaussian DP at that "
                 "ε; for DP-SGD's Gaussian noise this reads as (ε, δ))")
    return line + "."


def trials_line(result: DpAuditResult) -> str | None:
    """What the n-gram trials were, in words (None: the canaries came from a scores file)."""
    t = result.trials
    if t is None:
        return None
    return (f"Trials: {t.models:,} n-gram models trained with DP-SGD (σ = {t.sigma:g}, q = 1, "
            f"{t.steps:,} steps; Stock et al. §4.1), one per canary; a fair coin put the canary "
            f"({t.digits} digits over {t.symbols} symbols) in its training set, and the score is "
            "log f_θ(canary).")


def bounds_table(result: DpAuditResult) -> pd.DataFrame:
    return pd.DataFrame([{
        "bound": BOUND_NAMES[bound_name(b.method)],
        "threshold": THRESHOLD_NAMES[threshold_name(b.method)], "ε ≥": round(b.epsilon_lower, 3),
        "confidence": f"{b.confidence:.1%}", "canaries counted": b.canaries,
        "TP": b.true_positives, "FP": b.false_positives, "TN": b.true_negatives,
        "FN": b.false_negatives,
        "member if score": f"{'≥' if b.direction == 'above' else '≤'} {b.threshold:.4g}",
        "non-member if score": ("below the member threshold" if b.nonmember_threshold is None
                                else f"≤ {b.nonmember_threshold:.4g} (else abstain)"),
        "β split over": b.tests,
    } for b in result.bounds])


def _histogram(result: DpAuditResult, key: str) -> None:
    """Members' and non-members' scores, with the best bound's thresholds."""
    edges = result.histogram.edges
    centers = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
    widths = [b - a for a, b in zip(edges, edges[1:])]
    figure = go.Figure()
    for name, counts in (("non-members", result.histogram.nonmembers),
                         ("members", result.histogram.members)):
        figure.add_trace(go.Bar(x=centers, y=counts, width=widths, name=name, opacity=0.6,
                                marker_color=COLORS[name]))
    best = next(b for b in result.bounds if b.method == result.best_method)
    sign = "≥" if best.direction == "above" else "≤"
    figure.add_vline(x=best.threshold, line_dash="dash", line_color="#444",
                     annotation_text=f"member if {sign} {best.threshold:.3g}")
    if best.nonmember_threshold is not None:
        figure.add_vline(x=best.nonmember_threshold, line_dash="dot", line_color="#444",
                         annotation_text=f"non-member if ≤ {best.nonmember_threshold:.3g}",
                         annotation_position="top left")
    figure.update_layout(barmode="overlay", title="Scores of the canaries, and the guesses of "
                         f"the best bound ({method_words(best.method)})", xaxis_title="score "
                         "(higher: more likely a member)", yaxis_title="canaries")
    st.plotly_chart(figure, key=f"{key}histogram")


def render(result: DpAuditResult, *, key: str) -> None:
    if result.stopped_early:
        st.warning("Stopped early: only the methods finished are shown.")
    if result.epsilon_upper is not None and result.epsilon_lower > result.epsilon_upper:
        st.error("The audited ε is above the accountant's: the training, its accounting or the "
                 "canaries' coin flips are not what they claim, or this is one of the rare audits "
                 "(at most 1 − confidence of them) whose bound misses.")
    trials = trials_line(result)
    if trials:
        st.markdown(trials)
    st.markdown(summary_line(result))
    cols = st.columns(5)
    cols[0].metric("Audited ε (lower bound)", f"{result.epsilon_lower:.2f}",
                   help=f"{method_words(result.best_method)}, at δ = {result.delta:g}")
    if result.epsilon_lower_fdp_one_run is not None:
        cols[1].metric("Gaussian-DP ε (f-DP one run)", f"{result.epsilon_lower_fdp_one_run:.2f}",
                       help="Mahloujifar et al. 2025: the run is not μ-GDP at the μ of this "
                            "(ε, δ); a bound on (ε, δ) only for Gaussian mechanisms (DP-SGD's "
                            "noise), so it is not the headline")
    if result.epsilon_upper is not None:
        cols[2].metric("Accountant's ε (upper bound)", f"{result.epsilon_upper:.2f}",
                       help="RDP of DP-SGD at δ (Balle et al. 2020 conversion)")
        cols[3].metric("Gap", f"{result.epsilon_gap:.2f}",
                       help="what the attack leaves unproven of the guarantee")
    if result.epsilon_last_iterate is not None:
        cols[4].metric("Last-iterate ε (heuristic)", f"{result.epsilon_last_iterate:.2f}",
                       help="Steinke et al. (ICLR 2025): ε if only the final model is seen and the "
                            "loss were linear. A heuristic, not a guarantee: between the audited "
                            "ε and the composed one in their experiments")
    with st.container(key=f"{key}bounds"):
        st.dataframe(bounds_table(result), hide_index=True)
    st.caption(f"{result.canaries:,} canaries, {result.members:,} of them members · "
               f"{result.seconds:.2f} s. The Clopper–Pearson bounds treat the canaries as "
               "independent trials (one model each); for canaries in one training run only the "
               "one-run bounds are proven. The f-DP bound's ε is a Gaussian curve's: it proves "
               "the run is not μ-GDP with the μ of (ε, δ), which is (ε, δ)'s meaning for "
               "DP-SGD's Gaussian noise.")
    _histogram(result, key)
