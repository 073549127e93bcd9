"""Differential rank (Zanella-Béguelin, Tople et al. 2020): what changed between two snapshots?"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.attacks.diffrank import DiffRankConfig, check_same_tokenizer, run
from core.demo import scenario
from core.errors import UserError
from ui.jobs import download_buttons, job_panel, start_job
from ui.models import model_picker

BEAMS = [2**i for i in range(3, 13)]

st.title("Differential rank")
st.markdown(
    "A model is retrained and shipped again: comparing the snapshot **before** and **after** "
    "the update reveals the text that was added, with no knowledge of it. The differential "
    "score of a phrase is DS = Σ_i [p_after(s_i | s_<i) − p_before(s_i | s_<i)] (RDS: the "
    "relative increase); a beam search (width k, halved at every step) finds the sequences "
    "with the highest score, and a phrase's *differential rank* is how many sequences beat it "
    "(Zanella-Béguelin, Tople et al., *Analyzing Privacy Loss in Updates of Natural Language "
    "Models*). CLI: `python -m core diffrank --before demo:base --after demo:updated "
    "--length 4 --beam 256 --json`.")


def _demo_canary() -> str:
    try:
        return scenario.load_manifest()["canaries"][0]["phrase"]
    except (UserError, KeyError, IndexError):
        return ""


def _config() -> tuple[DiffRankConfig | None, bool]:
    """The page's settings as a config (None, with an error shown, when not usable) and
    whether the models are on a GPU."""
    before = model_picker("Before the update", key="diffrank-before", default="demo:base")
    after = model_picker("After the update", key="diffrank-after", default="demo:updated")
    if before is None or after is None:
        return None, False
    try:
        check_same_tokenizer(before, after)
    except UserError as err:
        st.error(str(err))
        return None, False
    cols = st.columns(4)
    length = cols[0].number_input("Length L (tokens)", 1, 12, DiffRankConfig.length)
    beam = cols[1].select_slider("Initial beam width k", BEAMS, DiffRankConfig.beam,
                                 help="halved at every step: k, k/2, k/4, ... sequences")
    groups = cols[2].number_input("Groups G (1: vanilla)", 1, 64, 1,
                                  help="group beam search: the k best first tokens in G groups "
                                       "by score, each extended on its own (Tables 3-4)")
    metric = cols[3].radio("Rank by", ["DS", "RDS"], horizontal=True,
                           help="RDS: relative increase, more robust to noise between runs")
    phrase = st.text_input("A phrase to score token by token and rank (optional)", _demo_canary())
    swap = st.toggle("Swap: what did the update remove?", False,
                     help="exchange the two models' roles")
    try:
        return DiffRankConfig(before=before.name, after=after.name, length=int(length), beam=beam,
                              groups=int(groups), relative=metric == "RDS", phrase=phrase,
                              swap=swap), before.device.type == "cuda"
    except UserError as err:
        st.error(str(err))
        return None, False


def _token_chart(phrase: dict) -> go.Figure:
    x = list(range(len(phrase["tokens"])))
    fig = go.Figure(go.Bar(x=x, y=phrase["ds_tokens"], name="DS",
                           customdata=list(zip(phrase["p_before"], phrase["p_after"])),
                           hovertemplate="DS %{y:.3f}<br>p before %{customdata[0]:.3g}"
                                         "<br>p after %{customdata[1]:.3g}"))
    fig.update_layout(title=f"DS token by token (total {phrase['ds']:.3f}, RDS {phrase['rds']:.3g})",
                      xaxis=dict(tickvals=x, ticktext=[repr(t)[1:-1] for t in phrase["tokens"]]),
                      yaxis_title="p_after − p_before", height=380)
    return fig


def _prefix_chart(phrase: dict) -> go.Figure:
    """RQ3 / Figure 1: the score of what follows, given the first i tokens."""
    x = list(range(len(phrase["tokens"])))
    fig = go.Figure()
    fig.add_scatter(x=x, y=phrase["ds_tokens"], mode="lines+markers", name="DS of the next token")
    fig.add_scatter(x=x, y=phrase["suffix_ds"], mode="lines+markers", name="DS of the rest")
    fig.add_scatter(x=x, y=phrase["next_token_rank"], mode="lines+markers", yaxis="y2",
                    name="rank of the next token", line=dict(dash="dot"))
    fig.update_layout(title="Prefix knowledge: scores given the first i tokens",
                      xaxis_title="known prefix tokens i", yaxis_title="differential score",
                      yaxis2=dict(title="next-token rank (0: top)", overlaying="y", side="right",
                                  rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.25), height=380)
    return fig


def _show(result: dict) -> None:
    config = result["config"]
    st.caption(f"{result['after']} vs {result['before']}{' (swapped)' if config['swap'] else ''} · "
               f"ranked by {result['metric'].upper()} · L = {config['length']}, widths "
               f"{result['widths']}, G = {config['groups']} · {result['extensions_scored']:,} "
               f"extensions scored on {result['device']} in {result['seconds']:.1f} s")
    for note in result["notes"]:
        st.info(note)
    phrase = result.get("phrase")
    if phrase:
        cols = st.columns(4)
        cols[0].metric("Phrase DS", f"{phrase['ds']:.3f}")
        cols[1].metric("Phrase RDS", f"{phrase['rds']:.3g}")
        lower = "not ranked" if phrase["rank"] is None else f"≥ {phrase['rank']}"
        cols[2].metric(f"Rank of its first {phrase['ranked_tokens']} tokens (search)", lower)
        exact = phrase["exact_rank"]
        cols[3].metric("Exact rank (all sequences)", "too many" if exact is None else exact)
        left, right = st.columns(2)
        left.plotly_chart(_token_chart(phrase))
        right.plotly_chart(_prefix_chart(phrase))
    st.subheader("Sequences found")
    table = pd.DataFrame(result["rows"], columns=["rank", "phrase", "ds", "rds", "group"])
    st.dataframe(table, hide_index=True)
    download_buttons(result, "diffrank")


config, on_gpu = _config()
if st.button("Search", type="primary", disabled=config is None):
    start_job("diffrank", config, lambda progress, cancel: run(config, progress=progress,
                                                               cancel=cancel),
              title=config.title(), uses_gpu=on_gpu)
result = job_panel("diffrank")
if result is not None and result.get("rows") is not None:
    _show(result)
