"""Renderer of a user-inference result: metrics with intervals, T̂ histograms, ROC (linear and
log-log), the attacker-knowledge curve (Kandpal et al. 2023, Figure 5) and the ranked users."""

from __future__ import annotations

import dataclasses

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.attacks.user_inference.spec import UserInferenceResult
from core.evaluation.membership import Metrics
from ui.calibration import calibration_caption
from core.reporting.figures import roc_figure
from ui.expected import Expected, auroc, chosen, expected_caption, figures_for
from ui.text import plain


def _ci(values: list[float]) -> str:
    return f"95% CI {values[0]:.3f}–{values[1]:.3f}" if values else "no bootstrap"


def _resolution(fpr: float, n_out: int) -> str:
    """A word when ``fpr`` is below the smallest FPR that ``n_out`` held-out users can show."""
    if fpr >= 1 / n_out:
        return ""
    return (f"; {fpr:.1%} FPR is below the resolution of {n_out} held-out users "
            f"(1/{n_out})").replace(".0%", "%")


def _metrics(metrics: list[Metrics], expected: Expected | None) -> None:
    """AUROC and TPR at low FPR, with their bootstrap intervals as captions (not as deltas),
    and the group's figures measured on the demo when the run was the demo's."""
    for m in metrics:
        points = [(0.001, m.tpr_at_01pct_fpr, m.tpr_at_01pct_fpr_ci)] * (m.tpr_at_01pct_fpr is not None)
        points += [(0.01, m.tpr_at_1pct_fpr, m.tpr_at_1pct_fpr_ci),
                   (0.05, m.tpr_at_5pct_fpr, m.tpr_at_5pct_fpr_ci)]
        cols = st.columns(1 + len(points))
        cols[0].metric(f"AUROC · {m.group} ({m.n_in} in / {m.n_out} out)", f"{m.auroc:.3f}")
        cols[0].caption(_ci(m.auroc_ci))
        expected_caption(expected, auroc(m.group), where=cols[0])
        for col, (fpr, tpr, ci) in zip(cols[1:], points):
            col.metric(f"TPR at {fpr:.1%} FPR".replace(".0%", "%"), f"{tpr:.3f}")
            col.caption(_ci(ci) + _resolution(fpr, m.n_out))


def _histogram(users: pd.DataFrame, threshold: float | None, key: str) -> None:
    """T̂ of held-in and held-out users, real and canary users side by side when labelled."""
    fig = px.histogram(users, x="t_hat", color="who", barmode="overlay", opacity=0.6,
                       facet_col="users" if users["canary"].notna().all() else None,
                       title="T̂ of held-in and held-out users",
                       labels={"t_hat": "T̂ = mean log p_θ(x) − log p_ref(x) (nats)"})
    fig.for_each_annotation(lambda a: a.update(text=a.text.removeprefix("users=")))
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text="threshold")
    st.plotly_chart(fig, key=f"{key}histogram")


def _knowledge(result: UserInferenceResult, key: str) -> None:
    curve = pd.DataFrame([dataclasses.asdict(p) for p in result.knowledge])
    fig = go.Figure([
        go.Scatter(x=list(curve.m) + list(curve.m[::-1]),
                   y=list(curve.auroc_mean + curve.auroc_std)
                   + list((curve.auroc_mean - curve.auroc_std)[::-1]),
                   fill="toself", line=dict(width=0), name="± std over draws", opacity=0.3),
        go.Scatter(x=curve.m, y=curve.auroc_mean, mode="lines+markers", name="mean AUROC")])
    fig.update_layout(title="Attacker knowledge: AUROC vs samples per user (Figure 5)",
                      xaxis_title="m (samples per user held by the attacker)",
                      yaxis_title="AUROC", height=380)
    st.plotly_chart(fig, key=f"{key}knowledge")


def render(result: UserInferenceResult, *, key: str) -> None:
    calibration_caption(result.calibration)
    for note in result.notes:
        st.info(plain(note))
    st.caption(f"{result.n_users} users, {result.n_samples} samples, on {result.device} in "
               f"{result.seconds:.1f} s ({result.users_per_minute:.0f} users per minute).")
    _metrics(result.metrics, figures_for(
        "user-inference", result.calibration, model=result.model, data=result.data,
        reference=chosen(result.reference, result.calibration)))
    users = pd.DataFrame([dataclasses.asdict(r) for r in result.rows])
    users["who"] = users["member"].map({True: "held-in", False: "held-out"}).fillna("unknown")
    users["users"] = users["canary"].map({True: "canary users", False: "real users"})
    _histogram(users, result.threshold, key)
    if result.metrics:
        left, right = st.columns(2)
        left.plotly_chart(roc_figure(result.metrics, log=False), key=f"{key}roc-linear")
        right.plotly_chart(roc_figure(result.metrics, log=True), key=f"{key}roc-log")
    if result.knowledge:
        _knowledge(result, key)
    st.subheader("Users ranked by T̂")
    if result.threshold is not None:
        st.caption(f"Threshold {result.threshold:.3f}: calibrated on the {result.n_known_out} "
                   f"users known to be out (member = false) at FPR {result.calibration_fpr:g}; "
                   f"{int(users['flagged'].sum())} users flagged as held-in.")
    with st.container(key=f"{key}users"):  # a table has no key of its own
        st.dataframe(users.drop(columns="who"), hide_index=True)
    if result.samples:
        samples = pd.DataFrame([dataclasses.asdict(s) for s in result.samples])
        st.download_button("Download per-sample scores (CSV)", samples.to_csv(index=False),
                           "user_inference_samples.csv", "text/csv", key=f"{key}download-samples")
