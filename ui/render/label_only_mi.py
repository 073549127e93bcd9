"""Renderer of a label-only membership-inference result: target accuracies and ε, attack accuracy
with its interval over seeds, ROC curves, and the per-attack table."""

import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.label_only_mi import LabelOnlyResult
from ui.text import plain


def _table(result: LabelOnlyResult) -> pd.DataFrame:
    """One row per attack, without the per-seed lists and ROC curves."""
    return pd.DataFrame([{k: v for k, v in vars(a).items() if not isinstance(v, list)}
                         for a in result.attacks])


def _charts(result: LabelOnlyResult, table: pd.DataFrame, key: str) -> None:
    left, right = st.columns(2)
    fig = px.bar(table, x="attack", y="accuracy_mean", error_y="accuracy_ci", range_y=[0.4, 1],
                 title=f"Attack accuracy (mean and 95% interval over {result.seeds_done} seeds)")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    left.plotly_chart(fig, key=f"{key}accuracy")
    curves = pd.concat([pd.DataFrame({"false positive rate": a.roc_fpr,
                                      "true positive rate": a.roc_tpr,
                                      "attack": f"{a.attack} (AUROC {a.auroc_mean:.3f})"})
                        for a in result.attacks])
    fig = px.line(curves, x="false positive rate", y="true positive rate", color="attack",
                  title="ROC curves (first seed)")
    fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line=dict(dash="dot", color="grey"))
    right.plotly_chart(fig, key=f"{key}roc")


def render(result: LabelOnlyResult, *, key: str) -> None:
    for note in result.notes:
        st.info(plain(note))
    c = st.columns(3)
    c[0].metric("Target train accuracy", f"{result.train_accuracy:.3f}")
    c[1].metric("Target test accuracy", f"{result.test_accuracy:.3f}")
    c[2].metric("DP-SGD ε (δ = 1e-5)",
                "no DP" if result.epsilon is None else f"{result.epsilon:.2f}")
    table = _table(result)
    _charts(result, table, key)
    st.dataframe(table, hide_index=True, key=f"{key}attacks")
    if result.stopped_early:
        st.warning(f"Stopped early: results over the {result.seeds_done} seeds finished.")
