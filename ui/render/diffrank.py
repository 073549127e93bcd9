"""Renderer of a differential-rank result: the search's caption, the phrase's scores and ranks
with its two charts (token by token; prefix knowledge, RQ3 / Figure 1), the sequences found."""

import dataclasses

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks.diffrank import DiffRankResult, PhraseReport

COLUMNS = ["rank", "phrase", "ds", "rds", "group"]


def _token_chart(phrase: PhraseReport) -> go.Figure:
    x = list(range(len(phrase.tokens)))
    fig = go.Figure(go.Bar(x=x, y=phrase.ds_tokens, name="DS",
                           customdata=list(zip(phrase.p_before, phrase.p_after)),
                           hovertemplate="DS %{y:.3f}<br>p before %{customdata[0]:.3g}"
                                         "<br>p after %{customdata[1]:.3g}"))
    fig.update_layout(title=f"DS token by token (total {phrase.ds:.3f}, RDS {phrase.rds:.3g})",
                      xaxis=dict(tickvals=x, ticktext=[repr(t)[1:-1] for t in phrase.tokens]),
                      yaxis_title="p_after − p_before", height=380)
    return fig


def _prefix_chart(phrase: PhraseReport) -> go.Figure:
    """RQ3 / Figure 1: the score of what follows, given the first i tokens."""
    x = list(range(len(phrase.tokens)))
    fig = go.Figure()
    fig.add_scatter(x=x, y=phrase.ds_tokens, mode="lines+markers", name="DS of the next token")
    fig.add_scatter(x=x, y=phrase.suffix_ds, mode="lines+markers", name="DS of the rest")
    fig.add_scatter(x=x, y=phrase.next_token_rank, mode="lines+markers", yaxis="y2",
                    name="rank of the next token", line=dict(dash="dot"))
    fig.update_layout(title="Prefix knowledge: scores given the first i tokens",
                      xaxis_title="known prefix tokens i", yaxis_title="differential score",
                      yaxis2=dict(title="next-token rank (0: top)", overlaying="y", side="right",
                                  rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.25), height=380)
    return fig


def _phrase(phrase: PhraseReport, key: str) -> None:
    cols = st.columns(4)
    cols[0].metric("Phrase DS", f"{phrase.ds:.3f}")
    cols[1].metric("Phrase RDS", f"{phrase.rds:.3g}")
    lower = "not ranked" if phrase.rank is None else f"≥ {phrase.rank}"
    cols[2].metric(f"Rank of its first {phrase.ranked_tokens} tokens (search)", lower)
    exact = phrase.exact_rank
    cols[3].metric("Exact rank (all sequences)", "too many" if exact is None else exact)
    left, right = st.columns(2)
    left.plotly_chart(_token_chart(phrase), key=f"{key}tokens")
    right.plotly_chart(_prefix_chart(phrase), key=f"{key}prefix")


def render(result: DiffRankResult, *, key: str) -> None:
    config = result.config
    st.caption(f"{result.after} vs {result.before}{' (swapped)' if config.swap else ''} · "
               f"ranked by {result.metric.upper()} · L = {config.length}, widths "
               f"{result.widths}, G = {config.groups} · {result.extensions_scored:,} "
               f"extensions scored on {result.device} in {result.seconds:.1f} s")
    for note in result.notes:
        st.info(note)
    if result.phrase is not None:
        _phrase(result.phrase, key)
    with st.container(key=f"{key}sequences"):  # a table has no key of its own
        st.subheader("Sequences found")
        table = pd.DataFrame([dataclasses.asdict(row) for row in result.rows], columns=COLUMNS)
        st.dataframe(table, hide_index=True)
