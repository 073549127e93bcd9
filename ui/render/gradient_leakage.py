"""Renderer of a gradient-leakage result: metrics, reconstructions over iterations, the sweep."""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.labs.gradient_leakage import GradientLeakageResult
from ui.text import plain

MSE_RECONSTRUCTED = 1e-3  # below this image MSE a digit is visibly rebuilt


def _reconstructions(result: GradientLeakageResult, key: str) -> None:
    rows = [("original", np.array(result.originals))] + [
        (f"iter {s.iteration}", np.array(s.images)) for s in result.snapshots]
    shown = min(len(result.originals), 8)
    images = np.concatenate([imgs[:shown] for _, imgs in rows])
    fig = px.imshow(images, facet_col=0, facet_col_wrap=shown, binary_string=True,
                    facet_row_spacing=0.02, facet_col_spacing=0.01)
    for annotation in fig.layout.annotations:
        row, col = divmod(int(annotation.text.split("=")[1]), shown)
        annotation.text = f"{rows[row][0]} · #{col}"
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(height=140 * len(rows))
    st.subheader("Originals (top) and reconstructions over the iterations")
    st.caption(f"Shown: the first {shown} images of the batch; true labels "
               f"{result.true_labels[:shown]}, recovered {result.recovered_labels[:shown]}.")
    st.plotly_chart(fig, key=f"{key}images")


def _sweep(result: GradientLeakageResult, key: str) -> None:
    table = pd.DataFrame([vars(p) for p in result.sweep])
    st.subheader("Batch-size limit")
    fig = px.line(table, x="batch_size", y="mse", markers=True, log_y=True,
                  title="Reconstruction error against batch size")
    fig.add_hline(y=MSE_RECONSTRUCTED, line_dash="dot", annotation_text="MSE 1e-3")
    st.plotly_chart(fig, key=f"{key}sweep-chart")
    st.dataframe(table, hide_index=True, key=f"{key}sweep-table")


def render(result: GradientLeakageResult, *, key: str) -> None:
    for note in result.notes:
        st.info(plain(note))
    if result.stopped_early:
        st.warning("Stopped early: showing the last reconstruction reached.")
    c = st.columns(3)
    c[0].metric("Image MSE", f"{result.mse:.2e}")
    c[0].caption("reconstructed" if result.mse < MSE_RECONSTRUCTED else "not reconstructed")
    c[1].metric("Labels recovered", f"{result.label_accuracy:.0%}")
    c[2].metric("Iterations run", len(result.history))
    if result.snapshots:
        _reconstructions(result, key)
        history = pd.DataFrame(result.history)
        st.plotly_chart(px.line(history, x="iteration", y=["mse", "gradient_loss"], log_y=True,
                                title="Image MSE and gradient-matching loss"),
                        key=f"{key}history")
    if result.sweep:
        _sweep(result, key)
