"""Renderer of a secret-sharer exposure result (Carlini et al. 2019): each secret's exposure in
bits and how it was found, and where each secret falls among the random fillers."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks.membership.exposure import ExposureResult
from ui.text import chart_text, plain


def _table(result: ExposureResult, key: str) -> None:
    table = pd.DataFrame([{"secret": s.secret, "exposure (bits)": round(s.exposure_bits, 2),
                           "method": s.method, "rank": s.rank,
                           "log-perplexity (nats)": round(s.log_perplexity, 3), "text": s.text}
                          for s in result.secrets])
    with st.container(key=f"{key}secrets"):
        st.dataframe(table, hide_index=True)


def _histogram(result: ExposureResult, key: str) -> None:
    """The fillers' log-perplexities, with a vertical line at each secret's."""
    edges, counts = result.histogram_edges, result.histogram_counts
    figure = go.Figure(go.Bar(x=[(a + b) / 2 for a, b in zip(edges, edges[1:])], y=counts,
                              width=[b - a for a, b in zip(edges, edges[1:])], name="fillers",
                              marker_color="#1f77b4", opacity=0.7))
    for secret in result.secrets:
        label = chart_text(f"{secret.secret}: {secret.exposure_bits:.1f} bits")
        figure.add_vline(x=secret.log_perplexity, line_color="#d62728", line_dash="dash",
                         annotation_text=label)
    figure.update_layout(title="Log-perplexity of the fillers and of each secret",
                         xaxis_title="log-perplexity (nats)", yaxis_title="fillers")
    st.plotly_chart(figure, key=f"{key}histogram")


def render(result: ExposureResult, *, key: str) -> None:
    if result.stopped_early:
        st.warning("Stopped early: the exposures use the fillers scored so far.")
    drawn = ("the whole space, enumerated" if result.enumerated
             else f"drawn at random from the {2 ** result.space_bits:,.0f} candidates")
    st.caption(f"Space of secrets: |R| = 2^{result.space_bits:.2f}, so at most "
               f"{result.space_bits:.2f} bits of exposure · {result.n_fillers:,} fillers, {drawn} "
               f"· {result.seconds:.1f} s.")
    if any(s.method == "skew-normal" for s in result.secrets):
        st.caption("skew-normal: the secret is below every filler drawn; its exposure is "
                   "extrapolated from a skew-normal fitted to the fillers (−log2 CDF).")
    bound = result.dp_bound_bits
    cols = st.columns(len(result.secrets[:4]) + (bound is not None))
    for col, secret in zip(cols, result.secrets):
        col.metric(plain(f"Exposure · {secret.secret}"), f"{secret.exposure_bits:.2f} bits")
    if bound is not None:
        cols[-1].metric("DP bound L(p0) for this length", f"{bound:.2f} bits")
        st.caption(f"The Bound Explorer's L(p0) for a {result.space_bits:.2f}-bit secret under "
                   "the training run's σ, q and steps: no attack learns more than this. An "
                   "exposure above it means the run was not as private as its parameters say "
                   "(or the exposure's rank is a noisy estimate).")
    _table(result, key)
    _histogram(result, key)
