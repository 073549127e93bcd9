"""Renderer of a memorisation-in-bits result: b (Liu, Evans & Xiong 2026), the greedy-extractable
fraction and the DP bound L(p0) side by side; each phrase's and pair's b and p_z (Hayes et al.
2025); the easiest windows; and every window's b."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks.inextractability.config import InextractabilityResult
from core.attacks.inextractability.views import pair_rows, record_rows
from ui.public import public_tables
from ui.text import plain


def _bits(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} bits"


def _pairs(result: InextractabilityResult, key: str) -> None:
    with st.container(key=f"{key}pairs"):
        st.dataframe(pd.DataFrame(pair_rows(result)), hide_index=True)


def _records(result: InextractabilityResult, key: str) -> None:
    with st.container(key=f"{key}records"):
        public_tables(pd.DataFrame(record_rows(result)), [r.public for r in result.records],
                      what="windows")


def _histogram(result: InextractabilityResult, key: str) -> None:
    edges, counts = result.histogram_edges, result.histogram_counts
    figure = go.Figure(go.Bar(x=[(a + b) / 2 for a, b in zip(edges, edges[1:])], y=counts,
                              width=[b - a for a, b in zip(edges, edges[1:])],
                              marker_color="#1f77b4"))
    figure.update_layout(title=f"b of every {result.window}-token window",
                         xaxis_title="b (bits)", yaxis_title="windows")
    st.plotly_chart(figure, key=f"{key}histogram")


def _headline(result: InextractabilityResult) -> None:
    cols = st.columns(3)
    cols[0].metric(f"b (l = {result.window}, m = {result.rank_threshold})", _bits(result.b))
    cols[1].metric("Greedy-extractable windows", "—" if result.greedy_fraction is None
                   else f"{100 * result.greedy_fraction:.2f}%")
    cols[2].metric("DP bound L(p0) for b bits", _bits(result.dp_bound_bits))
    st.caption(plain(result.dp_note))


def render(result: InextractabilityResult, *, key: str) -> None:
    st.caption(plain(f"{result.texts:,} texts ({result.skipped:,} shorter than l = "
                     f"{result.window} tokens), {result.windows:,} windows; a token of rank r ≤ "
                     f"m costs log2 r bits, else −log2 p · p_z under {result.sampler} · "
                     f"{result.seconds:.1f} s."))
    for note in result.notes:
        st.info(plain(note))
    if result.b is not None:
        _headline(result)
        if result.worst is not None:
            st.caption(plain(f"Easiest window (text #{result.worst.record}): "
                             f"{result.worst.text!r}"))
    if result.pairs:
        st.subheader("Phrases and prefix/suffix pairs")
        _pairs(result, key)
    if result.records:
        st.subheader("The easiest windows")
        _records(result, key)
    if result.histogram_counts:
        _histogram(result, key)
