"""Renderer of a lazy-sampling risk result (Stock et al. 2022): where the tracked sentences
(planted or named by the user) rank, the calibrated loss of train vs test sentences and against
the probability of being generated (Figure 5), and the training sentences most at risk (Table 1),
down to the worst-ranked tracked sentence."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.attacks.lazy_risk.spec import LazyRiskResult
from ui.calibration import calibration_caption
from ui.expected import chosen, expected_caption, figures_for, tracked_ranks
from ui.public import public_tables
from ui.text import chart_text, plain

COLORS = {"train": "#d62728", "test": "#1f77b4", "generated": "#2ca02c"}
TABLE_COLUMNS = ["rank", "text", "copies", "log10_probability", "expected_samples",
                 "calibrated_loss", "risk", "record_risk"]
DEFAULT_ROWS = 20
MAX_DEFAULT_ROWS = 500  # the table opens down to the worst tracked sentence, up to this many rows


def _probability(log10: float | None) -> str:
    """10^x as text; "0" for a sentence the sampler never produces (−inf, or None once stored)."""
    return f"10^{log10:.1f}" if log10 is not None and np.isfinite(log10) else "0"


def _summary(result: LazyRiskResult) -> None:
    if result.stopped_early:
        st.warning("Stopped early: showing the sets that finished.")
    for note in result.notes:
        st.info(plain(note))
    sampler = result.sampler
    st.caption(f"Sampler: top-k {sampler.top_k or 'none'}, temperature {sampler.temperature} "
               f"· {', '.join(f'{n:,} {s}' for s, n in result.counts.items())} sentences "
               f"· {result.seconds:.1f} s.")
    cols = st.columns(len(result.mean_calibrated_loss))
    for col, (name, value) in zip(cols, result.mean_calibrated_loss.items()):
        col.metric(f"Mean calibrated loss · {name}", f"{value:.2f} nats")


def _tracked(result: LazyRiskResult, key: str) -> None:
    """The rank of each tracked sentence, and the worst of them."""
    if not result.tracked:
        return
    n_train = result.counts.get("train", 0)
    if result.worst_tracked_rank is not None:
        st.metric("Worst-ranked tracked sentence", f"{result.worst_tracked_rank:,} of {n_train:,}",
                  help="reading the ranking from the top, an auditor meets every tracked "
                       "sentence found by this rank")
    texts = [t.text for t in result.tracked]
    expected_caption(figures_for("lazy-risk", result.domain_calibration, model=result.model,
                                 calibration=chosen(result.calibration, result.domain_calibration),
                                 track=tuple(texts)), tracked_ranks(texts))
    table = pd.DataFrame([{"tracked": t.text, "rank": t.rank, "matches": t.matches,
                           "probability": _probability(t.log10_probability) if t.rank else "",
                           "calibrated_loss": t.calibrated_loss, "sentence": t.sentence}
                          for t in result.tracked])
    with st.container(key=f"{key}tracked"):
        st.dataframe(table, hide_index=True)


def _figure_5(result: LazyRiskResult, frame: pd.DataFrame, key: str) -> None:
    left, right = st.columns(2)
    hist = px.histogram(frame[frame["set"] != "generated"], x="calibrated_loss", color="set",
                        barmode="overlay", histnorm="probability density",
                        color_discrete_map=COLORS, opacity=0.6,
                        title="Calibrated loss L(θ, x) − L(θ0, x): train vs test")
    left.plotly_chart(hist, key=f"{key}histogram")
    finite = frame[frame["log10_probability"].notna()]
    finite = finite.assign(text=finite["text"].map(chart_text))   # hover text: no markup
    scatter = px.scatter(finite, x="log10_probability", y="calibrated_loss", color="set",
                         color_discrete_map=COLORS, hover_data=["text", "rank"], opacity=0.6,
                         title="Calibrated loss vs log10 probability of being generated")
    right.plotly_chart(scatter, key=f"{key}scatter")
    never = {s: n for s, n in result.never_generated.items() if n}
    if never:
        right.caption("Not shown, probability 0 (a token outside the top-k): "
                      + ", ".join(f"{n:,} {s}" for s, n in never.items()) + ".")


def _table_1(result: LazyRiskResult, train: pd.DataFrame, key: str) -> None:
    st.subheader("Most at risk (Table 1)")
    worst = result.worst_tracked_rank or 0
    default = min(len(train), max(DEFAULT_ROWS, min(worst, MAX_DEFAULT_ROWS)))
    rows = st.number_input("Rows", min_value=1, max_value=max(1, len(train)), value=max(1, default),
                           step=10, key=f"{key}rows",
                           help="shown from the most at risk; opens down to the worst-ranked "
                                "tracked sentence")
    table = train.head(int(rows))[TABLE_COLUMNS].copy()
    if result.tracked:
        named = {t.sentence for t in result.tracked if t.sentence is not None}
        table.insert(1, "tracked", table["text"].isin(named))
    table["probability"] = [_probability(v) for v in table.pop("log10_probability")]
    table["expected_samples"] = [f"{v:.3g}" if pd.notna(v) else "∞"
                                 for v in table["expected_samples"]]
    with st.container(key=f"{key}table-1"):
        marks = [s.public for s in result.sentences if s.set == "train"][:int(rows)]
        public_tables(table, marks, what="sentences")


def render(result: LazyRiskResult, *, key: str) -> None:
    if not result.sentences:
        st.info("No sentence was scored.")
        return
    calibration_caption(result.domain_calibration)
    _summary(result)
    _tracked(result, key)
    # infinities (a run's own result) and None (a stored one) alike: "never generated"
    frame = pd.DataFrame([dataclasses.asdict(s) for s in result.sentences])
    frame = frame.replace([np.inf, -np.inf], np.nan)
    _figure_5(result, frame, key)
    _table_1(result, frame[frame["set"] == "train"], key)
