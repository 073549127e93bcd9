"""Renderer of a differential-rank result: the search's caption and warnings, the phrase's
scores and rank in words (exact, or a bound among the searched sequences) with its two charts
(token by token; prefix knowledge, RQ3 / Figure 1), the sequences found."""

import dataclasses

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks.diffrank.spec import DiffRankResult, PhraseReport
from ui.calibration import calibration_caption
from ui.expected import expected_caption, figures_for, first_plant
from ui.public import public_tables
from ui.text import chart_text, plain

COLUMNS = ["rank", "phrase", "ds", "rds", "found_by", "group"]
SEED_COLUMNS = ["seed", "seed_source"]   # a seeded beam's rows: the context each was read after
STANDING = {"exact": "exact", "above_all": "above all searched",
            "among": "among searched", "below_all": "below all searched",
            "unranked": "not ranked"}
FEW_TICKS = 10     # an axis up to this many whole numbers gets a tick at each


def _integer_axis(top: int) -> dict:
    """Layout of an axis of whole numbers from 0 to ``top``: no fractional tick (with a few
    values plotly would tick 0.5 steps; from ``FEW_TICKS`` its steps are whole already)."""
    return dict(tickformat=",d", dtick=1 if top <= FEW_TICKS else None)


def _token_chart(phrase: PhraseReport) -> go.Figure:
    x = list(range(len(phrase.tokens)))
    labels = [chart_text(repr(t)[1:-1]) for t in phrase.tokens]
    fig = go.Figure(go.Bar(x=x, y=phrase.ds_tokens, name="DS",
                           customdata=list(zip(phrase.p_before, phrase.p_after)),
                           hovertemplate="DS %{y:.3f}<br>p before %{customdata[0]:.3g}"
                                         "<br>p after %{customdata[1]:.3g}"))
    fig.update_layout(title=f"DS token by token (total {phrase.ds:.3f}, RDS {phrase.rds:.3g})",
                      xaxis=dict(tickvals=x, ticktext=labels),
                      yaxis_title="p_after − p_before", height=380)
    return fig


def _prefix_chart(phrase: PhraseReport) -> go.Figure:
    """RQ3 / Figure 1: the score of what follows, given the first i tokens."""
    x = list(range(len(phrase.tokens)))
    ranks = _integer_axis(max(phrase.next_token_rank, default=0))
    fig = go.Figure()
    fig.add_scatter(x=x, y=phrase.ds_tokens, mode="lines+markers", name="DS of the next token")
    fig.add_scatter(x=x, y=phrase.suffix_ds, mode="lines+markers", name="DS of the rest")
    fig.add_scatter(x=x, y=phrase.next_token_rank, mode="lines+markers", yaxis="y2",
                    name="rank of the next token", line=dict(dash="dot"))
    fig.update_layout(title="Prefix knowledge: scores given the first i tokens",
                      xaxis=dict(title="known prefix tokens i", **_integer_axis(len(x) - 1)),
                      yaxis_title="differential score",
                      yaxis2=dict(title="next-token rank (0: top)", overlaying="y", side="right",
                                  rangemode="tozero", **ranks),
                      legend=dict(orientation="h", y=-0.25), height=380)
    return fig


def _rank_text(phrase: PhraseReport) -> str:
    """The rank as a metric value: exact, or a bound among the searched sequences."""
    if phrase.rank_bound == "exact":
        return f"{phrase.exact_rank:,} of {phrase.exact_space:,} (exact)"
    if phrase.rank is None:
        return "not ranked"
    return f"≥ {phrase.rank:,} of {phrase.searched:,} searched"


def _phrase(phrase: PhraseReport, key: str) -> None:
    cols = st.columns(3)
    cols[0].metric("Phrase DS", f"{phrase.ds:.3f}")
    cols[1].metric("Phrase RDS", f"{phrase.rds:.3g}")
    cols[2].metric(f"Differential rank ({STANDING[phrase.rank_bound]}, "
                   f"{len(phrase.tokens)} tokens)", _rank_text(phrase))
    st.markdown(plain(phrase.verdict))
    left, right = st.columns(2)
    left.plotly_chart(_token_chart(phrase), key=f"{key}tokens")
    right.plotly_chart(_prefix_chart(phrase), key=f"{key}prefix")


def render(result: DiffRankResult, *, key: str) -> None:
    config = result.config
    calibration_caption(result.calibration)
    beam = (f"widths {result.widths}, G = {config.groups} · " if result.widths else "")
    sample = f"{result.sample_texts} sample texts · " if result.sample_texts else ""
    st.caption(plain(f"{result.after} vs {result.before}{' (swapped)' if config.swap else ''} · "
               f"{config.strategy} search ranked by {result.metric.upper()} · L = "
               f"{config.length}, {beam}{sample}{result.extensions_scored:,} extensions scored "
               f"on {result.device} in {result.seconds:.1f} s"))
    for warning in result.warnings:
        st.warning(plain(warning))
    for note in result.notes:
        st.info(plain(note))
    if result.phrase is not None:
        _phrase(result.phrase, key)
    with st.container(key=f"{key}sequences"):  # a table has no key of its own
        st.subheader("Sequences found")
        expected_caption(figures_for("diffrank", result.calibration,
                                     **dataclasses.asdict(config)), first_plant)
        seeded = any(row.seed for row in result.rows)
        table = pd.DataFrame([dataclasses.asdict(row) for row in result.rows],
                             columns=COLUMNS + (SEED_COLUMNS if seeded else []))
        public_tables(table, [row.public for row in result.rows], what="sequences")
