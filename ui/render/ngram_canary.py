"""Renderer of an n-gram canary result: the paper's Figure 4 and the table behind it."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.dp.ngram_canary import NgramCanaryResult

FEW_EFFECTIVE_MODELS = 30  # below, a handful of models carries the Monte Carlo mean


def points_table(result: NgramCanaryResult) -> pd.DataFrame:
    return pd.DataFrame([{
        "sigma": p.sigma, "empirical_nats": p.empirical_leakage_nats,
        "interval_low": p.empirical_leakage_interval[0],
        "interval_high": p.empirical_leakage_interval[1],
        "bound_L_nats": p.bound_leakage_nats, "gap_nats": p.gap_nats,
        "min_h_nats": p.traditional_leakage_nats, "secret_bound_nats": p.secret_bound_nats,
        "best_attack_nats": p.optimal_leakage_nats, "effective_models": p.effective_models,
        "mean_log_f": p.mean_log_f, "std_log_f": p.std_log_f, "train_s": p.train_seconds,
    } for p in result.points])


def figure(table: pd.DataFrame, result: NgramCanaryResult) -> go.Figure:
    """The paper's Figure 4: empirical log(p1/p0) with its interval against the bounds."""
    fig = go.Figure()
    x = table["sigma"]
    fig.add_scatter(x=x, y=table["empirical_nats"], name="empirical log(p1/p0)",
                    mode="lines+markers", line=dict(color="black"),
                    error_y=dict(type="data", symmetric=False,
                                 array=table["interval_high"] - table["empirical_nats"],
                                 arrayminus=table["empirical_nats"] - table["interval_low"]))
    fig.add_scatter(x=x, y=table["bound_L_nats"], name="L(p0) (Stock et al.)",
                    line=dict(color="#1f77b4"))
    fig.add_scatter(x=x, y=table["min_h_nats"], name="min h (Mironov et al.)",
                    line=dict(color="#d62728", dash="dash"))
    fig.add_scatter(x=x, y=table["best_attack_nats"], name="best possible attack (GDP)",
                    line=dict(color="#2ca02c", dash="dot"))
    if result.config.record == "digit":
        fig.add_scatter(x=x, y=table["secret_bound_nats"], name="L(p0) for the T records",
                        line=dict(color="#9467bd", dash="dashdot"))
    full = -result.log_p0
    fig.add_hline(y=full, line_dash="dot", line_color="gray",
                  annotation_text=f"full leak log(1/p0) = {full:.1f}")
    top = min(max(table["min_h_nats"].max(), full) * 1.1, 2 * full)
    fig.update_layout(xaxis_title="noise multiplier σ", yaxis_title="leakage (nats)",
                      yaxis_range=[min(0.0, table["interval_low"].min()), top], height=460,
                      legend=dict(orientation="h", y=-0.2))
    return fig


def _warnings(table: pd.DataFrame, result: NgramCanaryResult) -> None:
    above = table[table["empirical_nats"] > table["bound_L_nats"]]
    if not above.empty:
        st.warning(f"Above the one-record L(p0) at σ = {', '.join(f'{s:g}' for s in above['sigma'])}"
                   + (": each digit is a record, so the secret is T records and only the T-record "
                      "bound covers it." if result.config.record == "digit" else "."))
    few = table[table["effective_models"] < FEW_EFFECTIVE_MODELS]
    if not few.empty:
        st.warning(
            f"At σ = {', '.join(f'{s:g}' for s in few['sigma'])} fewer than {FEW_EFFECTIVE_MODELS} "
            "models carry the estimate of p1 (effective_models): the Monte Carlo mean is "
            "dominated by rare models and underestimates p1. Use fewer steps or more models.")
    if result.stopped_early:
        st.warning("Stopped early: showing the σ values that finished.")


def render(result: NgramCanaryResult, *, key: str) -> None:
    table = points_table(result)
    if table.empty:
        st.warning("The run stopped before the first σ finished: nothing to show.")
        return
    config = result.config
    canary = "".join(str(d) if d < 10 else f"[{d}]" for d in result.canary)
    st.caption(f"Canary {canary} · p0 = {config.symbols}^-{config.digits} · "
               f"{config.models:,} models × {config.steps} steps per σ on {result.device} "
               f"· {result.seconds:.1f} s")
    st.plotly_chart(figure(table, result), key=f"{key}figure-4")
    with st.container(key=f"{key}points"):
        st.dataframe(table, hide_index=True)
    _warnings(table, result)
