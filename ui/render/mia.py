"""Renderer of a membership-inference result: the attacks side by side with the blind baseline
(AUROC and TPR at low FPR with intervals), one ROC with every attack (linear and log-log), the
score histograms of members and non-members, AUROC per group and the per-text table."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.attacks.membership.config import MiaResult
from core.attacks.membership.views import below_chance_warning, comparison
from core.reporting.figures import roc_figure
from ui.calibration import calibration_caption
from ui.heat_map import token_heat_map
from ui.text import plain


def _table(result: MiaResult, key: str) -> None:
    """The attacks, best AUROC first, then the blind baseline."""
    with st.container(key=f"{key}attacks"):
        st.dataframe(pd.DataFrame(comparison(result)), hide_index=True)
    n_out = result.n_non_members
    st.caption(f"{result.n_members} members, {n_out} non-members. The smallest FPR {n_out} "
               f"non-members can show is 1/{n_out} = {1 / n_out:.2%}: a TPR at a lower FPR is "
               "that of a threshold with no false positive. TPR at an FPR takes the best "
               "threshold that exists (no interpolation); intervals are percentile bootstraps "
               "over members and non-members apart.")


def _histogram(result: MiaResult, key: str) -> None:
    names = {a.title: a.name for a in result.attacks}
    title = st.selectbox("Scores of", list(names), key=f"{key}histogram-attack")
    frame = pd.DataFrame({"score": [r.scores[names[title]] for r in result.rows],
                          "text": ["member" if r.member else "non-member" for r in result.rows]})
    figure = px.histogram(frame, x="score", color="text", barmode="overlay", opacity=0.6,
                          nbins=50, title=f"{title}: members vs non-members (higher: member)")
    st.plotly_chart(figure, key=f"{key}histogram")


def _per_text(result: MiaResult, key: str) -> None:
    frame = pd.DataFrame([{"text": r.text, "member": r.member, "group": r.group,
                           "tokens": r.n_tokens} | r.scores for r in result.rows])
    if not any(r.group for r in result.rows):
        frame = frame.drop(columns="group")
    with st.container(key=f"{key}texts"):
        st.dataframe(frame, hide_index=True, height=320)
    st.download_button("Download the per-text scores (CSV)", frame.to_csv(index=False),
                       file_name="membership-scores.csv", mime="text/csv",
                       key=f"{key}download-scores")


def _trained_text(row) -> str:
    """A row's text as a chooser names it: of a rendered conversation, its trained tokens."""
    if not row.trained or all(row.trained):
        return row.text
    return "".join(t for t, trained in zip(row.tokens, row.trained) if trained).strip()


def _heat_map(result: MiaResult, key: str) -> None:
    """Where in a chosen text the membership signal is: log p_target − log p_reference per
    token (texts by the best attack's score, most member-like first)."""
    rows = [r for r in result.rows if r.tokens]
    if not rows:
        return
    best = result.best().name
    order = sorted(range(len(rows)), key=lambda i: -rows[i].scores[best])
    chosen = st.selectbox(
        "Per-token heat map of", order, key=f"{key}heat",
        format_func=lambda i: f"{'member' if rows[i].member else 'non-member'} · "
                              f"{_trained_text(rows[i])[:80]!r}")
    row = rows[chosen]
    st.plotly_chart(token_heat_map(row.tokens, row.token_diff, True, row.trained or None),
                    key=f"{key}heat-map")
    st.caption("Blue: the target gives the token more probability than the reference (what "
               "fine-tuning on it would do); red: less. EZ-MIA sums these shifts where the "
               "target's top token is wrong.")


def render(result: MiaResult, *, key: str) -> None:
    best = result.best()
    for warning in (result.warning, below_chance_warning(result)):
        if warning:
            st.warning(plain(warning))
    cols = st.columns(3)
    cols[0].metric(f"Best attack · {best.title}", f"{best.metrics.auroc:.3f} AUROC")
    cols[1].metric("Blind baseline (no model)", f"{result.blind.auroc:.3f} AUROC")
    cols[2].metric("Scoring · analysis", f"{result.scoring_seconds:.1f} s · "
                                         f"{result.analysis_seconds:.1f} s")
    passes = ", ".join(f"{n:,} sequences through the {model}"
                       for model, n in result.sequences_scored.items())
    st.caption(plain(f"Target {result.model}" + (f" · reference {result.reference}"
                                                 if result.reference else "")
                     + f" · one scoring pass per model ({passes}) on {result.device}. Blind "
                     f"baseline: {result.blind_features}, logistic regression, scored out of "
                     "fold."))
    calibration_caption(result.calibration)
    for note in result.notes:
        st.caption(plain(note))
    _table(result, key)
    if result.tpr_caps:
        caps = ", ".join(f"{float(fpr):.1%} FPR: {cap:.3f}".replace(".0%", "%")
                         for fpr, cap in result.tpr_caps.items())
        st.info(f"The training run's σ, q and steps cap the TPR any membership attack can "
                f"reach (the trade-off curve of its privacy loss distribution): at {caps}. An "
                "attack above its cap means the run was not as private as its parameters say.")
    metrics = [a.metrics for a in result.attacks] + [result.blind]
    left, right = st.columns(2)
    left.plotly_chart(roc_figure(metrics, log=False), key=f"{key}roc-linear")
    right.plotly_chart(roc_figure(metrics, log=True), key=f"{key}roc-log")
    _histogram(result, key)
    if result.group_auroc:
        st.markdown("**AUROC per group** (groups holding members and non-members)")
        st.dataframe(pd.DataFrame(result.group_auroc).round(3), key=f"{key}groups")
    _heat_map(result, key)
    st.markdown("**Every text** (scores: higher means more likely a member)")
    _per_text(result, key)
