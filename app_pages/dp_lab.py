"""DP lab: does real DP-SGD training come close to the reconstruction bound? (Stock et al. 2022)"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from core.dp.finetune import DPFinetuneConfig
from core.dp.finetune import run as run_finetune
from core.dp.ngram_canary import NgramCanaryConfig, run, sigma_grid
from core.errors import UserError
from core.models import BUILTIN_SOURCES
from ui.jobs import job_panel, start_job
from ui.models import registry

MODEL_COUNTS = [100, 300, 1000, 3000, 10_000, 30_000, 100_000]
FEW_EFFECTIVE_MODELS = 30
LEARNING_RATES = [1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]
COLORS = ["#000000", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

st.title("DP lab")
st.markdown(
    "The Bound Explorer says how much a DP-SGD run *may* leak about a secret. Here the "
    "training is run for real, many times, and the leakage is measured, to see how close "
    "it comes to the bound.")


def _ngram_config() -> NgramCanaryConfig | None:
    """The n-gram knobs as a config; a bad value shows an error and gives None."""
    cols = st.columns(3)
    low, high = cols[0].slider("Noise multiplier σ range", 0.1, 20.0, (0.5, 10.0), step=0.1)
    count = cols[1].slider("Number of σ in the range", 1, 25, 9)
    exact = cols[2].text_input("…or exact σ values (comma-separated, overrides the range)", "")
    cols = st.columns(3)
    steps = cols[0].number_input("DP-SGD steps (q = 1)", 1, 1000, 10)
    models = cols[1].select_slider("N models per σ", MODEL_COUNTS, 10_000,
                                   format_func=lambda n: f"{n:,}")
    record = cols[2].radio(
        "One training record is…", ["canary", "digit"], horizontal=True,
        format_func={"canary": "the whole canary", "digit": "each digit (paper's statistics)"}.get)
    cols = st.columns(3)
    digits = cols[0].slider("Canary length T (digits)", 1, 20, 10)
    symbols = cols[1].slider("Alphabet size D", 2, 30, 10)
    seed = cols[2].number_input("Seed", 0, 10_000, 0)
    try:
        sigmas = exact if exact.strip() else sigma_grid(low, high, count)
        return NgramCanaryConfig(sigmas=sigmas, steps=int(steps), models=int(models),
                                 digits=digits, symbols=symbols, record=record, seed=int(seed))
    except UserError as err:
        st.error(str(err))
        return None


def _table(result: dict) -> pd.DataFrame:
    rows = []
    for p in result["points"]:
        low, high = p["empirical_leakage_interval"]
        rows.append({
            "sigma": p["sigma"], "empirical_nats": p["empirical_leakage_nats"],
            "interval_low": low, "interval_high": high,
            "bound_L_nats": p["bound_leakage_nats"], "gap_nats": p["gap_nats"],
            "min_h_nats": p["traditional_leakage_nats"],
            "secret_bound_nats": p["secret_bound_nats"],
            "best_attack_nats": p["optimal_leakage_nats"],
            "effective_models": p["effective_models"],
            "mean_log_f": p["mean_log_f"], "std_log_f": p["std_log_f"],
            "train_s": p["train_seconds"],
        })
    return pd.DataFrame(rows)


def _figure(table: pd.DataFrame, result: dict) -> go.Figure:
    """The paper's Figure 4: empirical log(p1/p0) with its interval against the bounds."""
    fig = go.Figure()
    x = table["sigma"]
    fig.add_scatter(x=x, y=table["empirical_nats"], name="empirical log(p1/p0)", mode="lines+markers",
                    line=dict(color="black"),
                    error_y=dict(type="data", symmetric=False,
                                 array=table["interval_high"] - table["empirical_nats"],
                                 arrayminus=table["empirical_nats"] - table["interval_low"]))
    fig.add_scatter(x=x, y=table["bound_L_nats"], name="L(p0) (Stock et al.)",
                    line=dict(color="#1f77b4"))
    fig.add_scatter(x=x, y=table["min_h_nats"], name="min h (Mironov et al.)",
                    line=dict(color="#d62728", dash="dash"))
    fig.add_scatter(x=x, y=table["best_attack_nats"], name="best possible attack (GDP)",
                    line=dict(color="#2ca02c", dash="dot"))
    if result["config"]["record"] == "digit":
        fig.add_scatter(x=x, y=table["secret_bound_nats"], name="L(p0) for the T records",
                        line=dict(color="#9467bd", dash="dashdot"))
    full = -result["log_p0"]
    fig.add_hline(y=full, line_dash="dot", line_color="gray",
                  annotation_text=f"full leak log(1/p0) = {full:.1f}")
    top = min(max(table["min_h_nats"].max(), full) * 1.1, 2 * full)
    fig.update_layout(xaxis_title="noise multiplier σ", yaxis_title="leakage (nats)",
                      yaxis_range=[min(0.0, table["interval_low"].min()), top], height=460,
                      legend=dict(orientation="h", y=-0.2))
    return fig


def _show_ngram(result: dict) -> None:
    config = result["config"]
    table = _table(result)
    if table.empty:
        st.warning("The run stopped before the first σ finished: nothing to show.")
        return
    canary = "".join(str(d) if d < 10 else f"[{d}]" for d in result["canary"])
    st.caption(f"Canary {canary} · p0 = {config['symbols']}^-{config['digits']} · "
               f"{config['models']:,} models × {config['steps']} steps per σ on {result['device']} "
               f"· {result['seconds']:.1f} s")
    st.plotly_chart(_figure(table, result))
    st.dataframe(table, hide_index=True)
    st.download_button("Download CSV", table.to_csv(index=False), "ngram_canary.csv", "text/csv",
                       key="download-ngram-csv")
    above = table[table["empirical_nats"] > table["bound_L_nats"]]
    if not above.empty:
        st.warning(f"Above the one-record L(p0) at σ = {', '.join(f'{s:g}' for s in above['sigma'])}"
                   + (": each digit is a record, so the secret is T records and only the T-record "
                      "bound covers it." if config["record"] == "digit" else "."))
    few = table[table["effective_models"] < FEW_EFFECTIVE_MODELS]
    if not few.empty:
        st.warning(
            f"At σ = {', '.join(f'{s:g}' for s in few['sigma'])} fewer than {FEW_EFFECTIVE_MODELS} "
            "models carry the estimate of p1 (effective_models): the Monte Carlo mean is "
            "dominated by rare models and underestimates p1. Use fewer steps or more models.")
    if result.get("stopped_early"):
        st.warning("Stopped early: showing the σ values that finished.")


def ngram_section() -> None:
    st.markdown(
        "Section 4.1 of the paper: a random canary of T digits is the only training data of a "
        "lazily trained n-gram model θ ∈ R^(T×D) (softmax loss). N models are trained with "
        "DP-SGD (Opacus' semantics: q = 1, clipping C = 1, noise σ, learning rate 0.5/σ) as one "
        "batched tensor computation; p1 = mean of f_θ(c) over the models is estimated in log "
        "space with a bootstrap interval, p0 = D^-T. The bounds use the same RDP accountant. "
        "CLI: `python -m core ngram-canary --sigma 2 --steps 10 --models 10000 --json`.")
    config = _ngram_config()
    if st.button("Train the models", type="primary", disabled=config is None):
        start_job("ngram-canary", config,
                  lambda progress, cancel: run(config, progress=progress, cancel=cancel),
                  title=f"n-gram canary, σ = {config.sigmas}, {config.models:,} models",
                  uses_gpu=config.torch_device().type == "cuda")
    result = job_panel("ngram-canary")
    if result is not None and result.get("points") is not None:
        _show_ngram(result)


def _finetune_config() -> DPFinetuneConfig | None:
    """The fine-tuning knobs as a config; a bad value shows an error and gives None."""
    default = DPFinetuneConfig()
    cols = st.columns(3)
    sigmas = cols[0].text_input("Noise multipliers σ (comma-separated, 0 = no DP)", default.sigmas,
                                key="ft-sigmas")
    steps = cols[1].number_input("Steps per σ", 1, 100_000, default.steps, key="ft-steps")
    repeats = cols[2].number_input("Canary copies in the training set", 1, 10_000,
                                   default.canary_repeats, key="ft-repeats")
    cols = st.columns(3)
    batch_size = cols[0].number_input("Expected batch size B", 1, 4096, default.batch_size, key="ft-batch")
    lr = cols[1].select_slider("Learning rate (AdamW)", LEARNING_RATES, default.lr,
                                format_func=lambda v: f"{v:g}", key="ft-lr")
    track_every = cols[2].number_input("Measure the secrecy every … steps", 1, 10_000,
                                       default.track_every, key="ft-track")
    with st.expander("More settings"):
        cols = st.columns(3)
        corpus = cols[0].text_input("Corpus: 'demo' or a .txt / .jsonl file", "demo", key="ft-corpus")
        clip = cols[1].number_input("Clipping norm C", 0.01, 100.0, 1.0, key="ft-clip")
        block_size = cols[2].number_input("Tokens per record", 8, 4096, 64, key="ft-block")
        cols = st.columns(3)
        max_records = cols[0].number_input("Corpus records kept", 10, 1_000_000, 2000, key="ft-records")
        validation_texts = cols[1].number_input("Validation texts", 1, 100_000, 200, key="ft-validation")
        checkpoint_every = cols[2].number_input("Checkpoint every … steps", 1, 100_000, 50, key="ft-checkpoint")
        seed = st.number_input("Seed (canary digits, batches, noise)", 0, 10_000, 0, key="ft-seed")
    cols = st.columns(2)
    loaded = registry().names()
    options = loaded + [s for s in BUILTIN_SOURCES if s not in loaded]
    choice = cols[0].selectbox("Model to fine-tune (a copy; loaded by the run)", options,
                               index=options.index("demo:base"), key="ft-model")
    path = cols[1].text_input("…or a model folder / .gguf file (overrides)", "", key="ft-model-path")
    try:
        return DPFinetuneConfig(
            model=path.strip() or choice, corpus=corpus.strip(), sigmas=sigmas, steps=int(steps),
            batch_size=int(batch_size), lr=float(lr), clip=float(clip), canary_repeats=int(repeats),
            max_records=int(max_records), block_size=int(block_size), track_every=int(track_every),
            checkpoint_every=int(checkpoint_every), validation_texts=int(validation_texts),
            seed=int(seed))
    except UserError as err:
        st.error(str(err))
        return None


def _curve_table(result: dict) -> pd.DataFrame:
    return pd.DataFrame([{"sigma": r["sigma"]} | p for r in result["runs"] for p in r["points"]])


def _utility_table(result: dict) -> pd.DataFrame:
    rows = [{"sigma": "base model", "validation_perplexity": result["base_validation_perplexity"],
             "final_secrecy_bits": result["base_secrecy_bits"],
             "measured_leakage_bits": result["prior_bits"] - result["base_secrecy_bits"]}]
    for r in result["runs"]:
        rows.append({
            "sigma": f"{r['sigma']:g}", "validation_perplexity": r["validation_perplexity"],
            "final_secrecy_bits": r["final_secrecy_bits"], "final_p1": r["final_p1"],
            "measured_leakage_bits": r["measured_leakage_bits"],
            "allowed_bits (one record)": r["allowed_bits"],
            "allowed_bits (all copies)": r["points"][-1]["group_allowed_bits"],
            "epsilon": r["points"][-1]["epsilon"], "opacus_epsilon": r["opacus_epsilon"],
            "below_bound": r["below_bound"], "resumed_from_step": r["resumed_from_step"],
            "train_s": r["seconds"]})
    return pd.DataFrame(rows)


def _finetune_figure(curves: pd.DataFrame, result: dict) -> go.Figure:
    """The paper's Figure 6: secrecy log2(1/p1) over steps per σ, with the prior and the bound."""
    fig = go.Figure()
    prior = result["prior_bits"]
    for index, (sigma, curve) in enumerate(curves.groupby("sigma", sort=True)):
        color = COLORS[index % len(COLORS)]
        fig.add_scatter(x=curve["step"], y=curve["secrecy_bits"], name=f"σ = {sigma:g}",
                        mode="lines+markers", line=dict(color=color))
        if sigma > 0:
            fig.add_scatter(x=curve["step"], y=prior - curve["allowed_bits"], mode="lines",
                            name=f"σ = {sigma:g}: least secrecy the bound allows",
                            line=dict(color=color, dash="dash"))
    fig.add_hline(y=prior, line_dash="dot", line_color="gray",
                  annotation_text=f"prior log2(10^16) = {prior:.1f} bits")
    fig.update_layout(xaxis_title="training step", yaxis_title="secrecy log2(1/p1) (bits)",
                      yaxis_rangemode="tozero", height=460, legend=dict(orientation="h", y=-0.2))
    return fig


def _show_finetune(result: dict) -> None:
    if not result.get("runs"):
        st.warning("The run stopped before the first σ had a measurement: nothing to show.")
        return
    st.caption(f"Canary “{result['canary']}” ({result['secret_tokens']} secret tokens) · "
               f"{result['n_records']:,} records, q = {result['q']:.3g} · on {result['device']} · "
               f"{result['seconds']:.0f} s · checkpoints: {result['checkpoint_dir']}")
    curves = _curve_table(result)
    st.plotly_chart(_finetune_figure(curves, result))
    st.markdown("**Utility and leakage per σ** (measured leakage = prior bits − secrecy bits)")
    st.dataframe(_utility_table(result), hide_index=True)
    st.download_button("Download CSV (tracked curves)", curves.to_csv(index=False),
                       "dp_finetune.csv", "text/csv", key="download-finetune-csv")
    modes = ", ".join(f"{layer}: {mode}" for layer, mode in result["clipping_modes"].items())
    st.caption(f"Opacus grad_sample_mode = {result['grad_sample_mode']} ({modes}).")
    above = [r["sigma"] for r in result["runs"] if r["below_bound"] is False]
    if above:
        st.warning(f"At σ = {', '.join(f'{s:g}' for s in above)} the measured leakage exceeds the "
                   "one-record bound: the canary's copies are several records, which only the "
                   "all-copies bound covers.")
    if result.get("stopped_early"):
        st.warning("Stopped early: run it again with the same settings to resume from the last "
                   "checkpoint.")


def finetune_section() -> None:
    st.markdown(
        "Section 4.3 and Figure 6 of the paper: a language model is fine-tuned with DP-SGD "
        "(Opacus, ghost clipping, frozen embeddings) on a corpus holding the canary "
        "“John Doe's credit card number is <16 random digits>” several times. The secrecy "
        "b = log2(1/p1) of the digits given the prompt is measured exactly along the way, for "
        "each σ (σ = 0: no clipping, no noise), and compared with the prior log2(10^16) and with "
        "the least secrecy the bound L(p0) still guarantees for the same (σ, q, steps). "
        "Runs resume from their checkpoints. "
        "CLI: `python -m core dp-finetune --sigmas 0,0.5,1 --steps 300 --canary-repeats 200 --json`.")
    config = _finetune_config()
    if st.button("Fine-tune", type="primary", disabled=config is None, key="ft-run"):
        start_job("dp-finetune", config,
                  lambda progress, cancel: run_finetune(config, progress=progress, cancel=cancel),
                  title=f"DP fine-tuning of {config.model}, σ = {config.sigmas}, {config.steps} steps",
                  uses_gpu=torch.cuda.is_available())
    result = job_panel("dp-finetune")
    if result is not None and result.get("runs") is not None:
        _show_finetune(result)


SECTIONS = {"Is the bound tight? (n-gram canary)": ngram_section,
            "DP fine-tuning with a secret canary": finetune_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()
