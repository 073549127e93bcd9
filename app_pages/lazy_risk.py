"""Lazy-sampling risk (Stock et al. 2022, §3.2 and §4.2): which training sentences would leak?"""

from __future__ import annotations

import math

import pandas as pd
import plotly.express as px
import streamlit as st

from core.attacks import lazy_risk as lr
from core.demo import scenario
from core.errors import UserError
from ui.documents import document_source
from ui.jobs import download_buttons, job_panel, start_job
from ui.models import model_picker

COLORS = {"train": "#d62728", "test": "#1f77b4", "generated": "#2ca02c"}

st.title("Lazy-sampling risk")
st.markdown(
    "Rather than sampling hundreds of thousands of times and hoping to hit a training sentence, "
    "compute for every training sentence x **the probability λ(x) that the attack's sampler "
    "generates it** (top-k and/or temperature, chain rule, 0 outside the top-k; about 1/λ(x) "
    "samples are needed to draw it) and its **calibrated loss** L(θ, x) − L(θ0, x) against a "
    "calibration model θ0 not trained on it (negative: memorised). Sentences with a high λ(x) "
    "and a low calibrated loss are at risk; they are ranked by log λ(x) − calibrated loss "
    "(Stock et al., *Defending against Reconstruction Attacks with Rényi Differential Privacy*, "
    "§3.2 and §4.2: Figure 5 and Table 1). CLI: `python -m core lazy-risk --model demo:updated "
    "--calibration demo:base --train demo:private_train --test demo:user_samples --json`.")

left, right = st.columns(2)
with left:
    target = model_picker("Target model", key="lr-target", default="demo:updated")
with right:
    calibration = model_picker("Calibration model (not trained on the data, same tokenizer)",
                               key="lr-calibration", default="demo:base")
if target is None or calibration is None:
    st.stop()
demo = target.source.startswith("demo:")
train = document_source("Training sentences", "demo:private_train" if demo else "", key="lr-train")
test = document_source("Test sentences, never trained on (optional)",
                       "demo:user_samples" if demo else "", key="lr-test")
cols = st.columns(5)
top_k = cols[0].number_input("Top-k (0: none)", 0, 1_000_000, 40, key="lr-top-k")
temperature = cols[1].number_input("Temperature", 0.01, 100.0, 1.0, key="lr-temperature")
start = cols[2].number_input("Starting temperature (decays to it)", 0.01, 100.0, 1.0,
                             key="lr-start", help="Carlini et al.'s decaying temperature: 10")
decay = cols[3].number_input("Decay over (tokens)", 1, 10_000, 20, key="lr-decay")
n_generated = cols[4].number_input("Generated sentences", 0, 100_000, 200, key="lr-generated")

try:
    config = lr.LazyRiskConfig(
        model=target.name, calibration=calibration.name, train=train, test=test,
        top_k=int(top_k), temperature=float(temperature), temperature_start=float(start),
        decay_tokens=int(decay), n_generated=int(n_generated))
except UserError as err:
    st.error(str(err))
    config = None
if st.button("Compute the risks", type="primary", disabled=config is None, key="lr-run"):
    start_job("lazy-risk", config, lambda progress, cancel: lr.run(config, progress=progress, cancel=cancel),
              title=f"lazy-sampling risk of {config.train} under {config.model}",
              uses_gpu=target.device.type == "cuda")


def show(result: dict) -> None:
    if result.get("stopped_early"):
        st.warning("Stopped early: showing the sets that finished.")
    for note in result["notes"]:
        st.info(note)
    frame = pd.DataFrame(result["sentences"])
    train = frame[frame["set"] == "train"]
    sampler = result["sampler"]
    st.caption(f"Sampler: top-k {sampler['top_k'] or 'none'}, temperature {sampler['temperature']} "
               f"· {', '.join(f'{n:,} {s}' for s, n in result['counts'].items())} sentences "
               f"· {result['seconds']:.1f} s.")
    if result["model"].startswith("demo:"):
        secret = scenario.load_manifest()["secret"]["sentence"]
        row = train[train["text"] == secret]
        if len(row):
            rank = int(row["rank"].iloc[0])
            st.metric("Planted secret: rank among the training sentences", f"{rank} of {len(train):,}",
                      f"top {100 * rank / len(train):.2g}%", delta_color="off")
    cols = st.columns(len(result["mean_calibrated_loss"]))
    for col, (name, value) in zip(cols, result["mean_calibrated_loss"].items()):
        col.metric(f"Mean calibrated loss · {name}", f"{value:.2f} nats")

    left, right = st.columns(2)
    shown = frame[frame["set"] != "generated"]
    hist = px.histogram(shown, x="calibrated_loss", color="set", barmode="overlay",
                        histnorm="probability density", color_discrete_map=COLORS, opacity=0.6,
                        title="Calibrated loss L(θ, x) − L(θ0, x): train vs test")
    left.plotly_chart(hist, key="lr-histogram")
    finite = frame[frame["log10_probability"].notna()]
    scatter = px.scatter(finite, x="log10_probability", y="calibrated_loss", color="set",
                         color_discrete_map=COLORS, hover_data=["text", "rank"], opacity=0.6,
                         title="Calibrated loss vs log10 probability of being generated")
    right.plotly_chart(scatter, key="lr-scatter")
    never = {s: n for s, n in result["never_generated"].items() if n}
    if never:
        right.caption("Not shown, probability 0 (a token outside the top-k): "
                      + ", ".join(f"{n:,} {s}" for s, n in never.items()) + ".")

    st.subheader("Most at risk (Table 1)")
    rows = st.slider("Rows", 5, 200, 20, key="lr-rows")
    table = train.head(rows)[["rank", "text", "copies", "log10_probability", "expected_samples",
                              "calibrated_loss", "risk"]].copy()
    table["probability"] = [f"10^{v:.1f}" if pd.notna(v) else "0" for v in table.pop("log10_probability")]
    table["expected_samples"] = [f"{v:.3g}" if pd.notna(v) and math.isfinite(v) else "∞"
                                 for v in table["expected_samples"]]
    st.dataframe(table, hide_index=True)
    download_buttons(result, "lazy-risk")


result = job_panel("lazy-risk")
if result is not None and result.get("sentences") is not None:
    show(result)
