"""DP lab: does real DP-SGD training come close to the reconstruction bound? (Stock et al. 2022)"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.dp.ngram_canary import NgramCanaryConfig, run, sigma_grid
from core.errors import UserError
from ui.jobs import job_panel, start_job

MODEL_COUNTS = [100, 300, 1000, 3000, 10_000, 30_000, 100_000]
FEW_EFFECTIVE_MODELS = 30

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


SECTIONS = {"Is the bound tight? (n-gram canary)": ngram_section}

for tab, section in zip(st.tabs(list(SECTIONS)), SECTIONS.values()):
    with tab:
        section()
