"""Renderer of a model-extraction result: metrics, recovered vs true weights, errors per neuron,
and the neurons' boundaries in a 2-D slice of input space."""

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.labs.model_extraction import ModelExtractionResult, plane_lines
from ui.text import plain

SLICE = 3.0  # the 2-D slice shows alpha, beta in [-3, 3]


def _metrics(result: ModelExtractionResult) -> None:
    c = st.columns(5)
    c[0].metric("Neurons found", f"{result.neurons_found} / {result.neurons_true}")
    c[0].caption(f"{result.neurons_extracted - result.neurons_found} spurious")
    c[1].metric("Queries", f"{result.queries:,}")
    c[2].metric("Max relative weight error", f"{result.max_rel_error:.1e}")
    c[2].caption(f"{result.bits_of_precision:.1f} bits")
    c[3].metric("Label agreement (all digits)", f"{result.label_agreement:.4f}")
    c[4].metric("Max logit error", f"{result.max_logit_error:.1e}")
    st.caption(f"Target test accuracy: {result.target_test_accuracy:.3f}.")


def _weights(result: ModelExtractionResult, key: str) -> None:
    """Scatter of recovered against true first-layer rows, and the error of each found neuron."""
    table = pd.DataFrame([vars(row) for row in result.neurons])
    found = table[table.found]
    left, right = st.columns(2)
    if not len(found):
        left.info("No neuron was recovered: nothing to compare.")
        return
    true_rows, rec_rows = np.array(result.true_rows), np.array(result.recovered_rows)
    pairs = pd.DataFrame({
        "true": true_rows[found.neuron].ravel(),
        "recovered": rec_rows[found.recovered_index].ravel(),
        "neuron": np.repeat(found.neuron.to_numpy(), true_rows.shape[1])})
    fig = px.scatter(pairs, x="true", y="recovered", hover_data=["neuron"], opacity=0.5,
                     title="Recovered vs true first-layer weights and biases (normalised)")
    lim = float(np.abs(pairs[["true", "recovered"]].to_numpy()).max())
    fig.add_trace(go.Scatter(x=[-lim, lim], y=[-lim, lim], mode="lines", name="y = x",
                             line=dict(dash="dot", color="grey")))
    left.plotly_chart(fig, key=f"{key}weights")
    errors = found.assign(error=np.maximum(found.rel_error_in, found.rel_error_out))
    right.plotly_chart(px.bar(errors, x="neuron", y="error", log_y=True,
                              title="Relative error per found neuron (log scale)"),
                       key=f"{key}errors")


def _boundaries(result: ModelExtractionResult, key: str) -> None:
    """Each neuron's line w.x + b = 0 in the slice: target solid grey, extraction dashed red."""
    st.subheader("Boundaries in a 2-D slice of input space")
    st.caption("Each line is where one hidden neuron switches (w·x + b = 0) in a plane through "
               "the mean digit: solid grey for the target, dashed red for the extracted network.")
    fig = go.Figure()
    span = np.linspace(-SLICE, SLICE, 2)
    for rows, style in ((result.true_rows, dict(color="grey")),
                        (result.recovered_rows, dict(color="red", dash="dash"))):
        for a, b, c0 in plane_lines(rows):
            if abs(b) > abs(a):   # beta as a function of alpha, else the other way round
                x_pts, y_pts = span, -(a * span + c0) / b
            else:
                x_pts, y_pts = -(b * span + c0) / a, span
            fig.add_trace(go.Scatter(x=x_pts, y=y_pts, mode="lines", line=style, showlegend=False))
    fig.update_layout(xaxis=dict(range=[-SLICE, SLICE], title="α"),
                      yaxis=dict(range=[-SLICE, SLICE], title="β"), height=500)
    st.plotly_chart(fig, key=f"{key}boundaries")


def render(result: ModelExtractionResult, *, key: str) -> None:
    for note in result.notes:
        st.warning(plain(note))
    _metrics(result)
    _weights(result, key)
    _boundaries(result, key)
    if result.stopped_early:
        st.warning("Stopped early: the numbers are from the lines searched so far.")
