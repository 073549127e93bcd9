"""Renderer of an n-gram canary result: the paper's Figure 4 and the table behind it, in bits."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.dp.ngram_canary import FEW_EFFECTIVE_MODELS, NgramCanaryResult

Y_MARGIN = 0.06            # of the y span, above and below every curve
CURVES = ("empirical_bits", "interval_low", "interval_high", "bound_L_bits", "min_h_bits",
          "best_attack_bits", "secret_bound_bits")  # what the figure draws, in bits
COLUMNS = {
    "sigma": st.column_config.NumberColumn("σ", format="%g"),
    "empirical_bits": st.column_config.NumberColumn(
        "measured bits", format="%.2f", help="log2(p1/p0): what the n-gram model leaks "
                                             "(Monte Carlo)"),
    "interval": st.column_config.TextColumn("interval", help="bootstrap confidence interval"),
    "bound_L_bits": st.column_config.NumberColumn(
        "L(p0) bits", format="%.2f", help="the bound for one record (Stock et al., Eq. 3)"),
    "gap_bits": st.column_config.NumberColumn(
        "gap bits", format="%.2f", help="min(L(p0), log2 1/p0) − measured"),
    "min_h_bits": st.column_config.NumberColumn(
        "min h bits", format="%.2f", help="the traditional bound (Mironov et al.)"),
    "best_attack_bits": st.column_config.NumberColumn(
        "best attack bits", format="%.2f", help="the most any attack can leak (Gaussian DP)"),
    "secret_bound_bits": st.column_config.NumberColumn(
        "L(p0) bits, T records", format="%.2f", help="the bound for the secret's T records"),
    "effective_models": st.column_config.NumberColumn(
        "effective models", format="%.0f", help="(Σ f)² / Σ f²: how many models carry p1"),
    "mean_log2_f": st.column_config.NumberColumn(
        "mean log2 f", format="%.2f", help="mean of log2 f_θ(c) over the models"),
    "std_log2_f": st.column_config.NumberColumn(
        "std log2 f", format="%.2f", help="its spread: the wider, the fewer models carry p1"),
    "train_s": st.column_config.NumberColumn("train s", format="%.2f"),
}


def points_table(result: NgramCanaryResult) -> pd.DataFrame:
    """One row per σ, every leakage in bits; the T-record bound only where records are digits."""
    table = pd.DataFrame([{
        "sigma": p.sigma, "empirical_bits": p.empirical_leakage_bits,
        "interval_low": p.empirical_leakage_interval[0],
        "interval_high": p.empirical_leakage_interval[1],
        "interval": "[{:.2f}, {:.2f}]".format(*p.empirical_leakage_interval),
        "bound_L_bits": p.bound_leakage_bits, "gap_bits": p.gap_bits,
        "min_h_bits": p.traditional_leakage_bits, "best_attack_bits": p.optimal_leakage_bits,
        "secret_bound_bits": p.secret_bound_bits, "effective_models": p.effective_models,
        "mean_log2_f": p.mean_log2_f, "std_log2_f": p.std_log2_f, "train_s": p.train_seconds,
    } for p in result.points])
    if result.config.record != "digit":
        table = table.drop(columns="secret_bound_bits")  # one record: equal to L(p0)
    return table


def y_range(table: pd.DataFrame, prior_bits: float) -> list[float]:
    """A y range holding every curve, the interval bars and the full-leak line, with a margin."""
    curves = table[[c for c in CURVES if c in table]]
    low, high = min(0.0, curves.min().min()), max(prior_bits, curves.max().max())
    margin = Y_MARGIN * (high - low)
    return [low - margin if low < 0 else 0.0, high + margin]


def figure(table: pd.DataFrame, result: NgramCanaryResult) -> go.Figure:
    """The paper's Figure 4, in bits: measured log2(p1/p0) with its interval against the bounds."""
    fig = go.Figure()
    x = table["sigma"]
    fig.add_scatter(x=x, y=table["empirical_bits"], name="measured log2(p1/p0)",
                    mode="lines+markers", line=dict(color="black"),
                    error_y=dict(type="data", symmetric=False,
                                 array=table["interval_high"] - table["empirical_bits"],
                                 arrayminus=table["empirical_bits"] - table["interval_low"]))
    fig.add_scatter(x=x, y=table["bound_L_bits"], name="L(p0) (Stock et al.)",
                    line=dict(color="#1f77b4"))
    fig.add_scatter(x=x, y=table["min_h_bits"], name="min h (Mironov et al.)",
                    line=dict(color="#d62728", dash="dash"))
    fig.add_scatter(x=x, y=table["best_attack_bits"], name="best possible attack (GDP)",
                    line=dict(color="#2ca02c", dash="dot"))
    if "secret_bound_bits" in table:
        fig.add_scatter(x=x, y=table["secret_bound_bits"], name="L(p0) for the T records",
                        line=dict(color="#9467bd", dash="dashdot"))
    full = result.prior_bits
    fig.add_hline(y=full, line_dash="dot", line_color="gray",
                  annotation_text=f"full leak log2(1/p0) = {full:.1f} bits")
    fig.update_layout(xaxis_title="noise multiplier σ", yaxis_title="leakage (bits)",
                      yaxis_range=y_range(table, full), height=460, margin=dict(t=30),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def _warnings(table: pd.DataFrame, result: NgramCanaryResult) -> None:
    above = table[table["empirical_bits"] > table["bound_L_bits"]]
    if not above.empty:
        st.warning(f"Above the one-record L(p0) at σ = {', '.join(f'{s:g}' for s in above['sigma'])}"
                   + (": each digit is a record, so the secret is T records and only the T-record "
                      "bound covers it." if result.config.record == "digit" else "."))
    few = table[table["effective_models"] < FEW_EFFECTIVE_MODELS]
    if not few.empty:
        st.warning(
            f"At σ = {', '.join(f'{s:g}' for s in few['sigma'])} fewer than {FEW_EFFECTIVE_MODELS} "
            "models carry the estimate of p1 (effective models): the Monte Carlo mean is "
            "dominated by rare models and underestimates p1. Every step spreads log2 f further: "
            "use fewer steps (more models help only slowly).")
    if result.stopped_early:
        st.warning("Stopped early: showing the σ values that finished.")


def render(result: NgramCanaryResult, *, key: str) -> None:
    table = points_table(result)
    if table.empty:
        st.warning("The run stopped before the first σ finished: nothing to show.")
        return
    config = result.config
    canary = "".join(str(d) if d < 10 else f"[{d}]" for d in result.canary)
    st.caption(f"Canary {canary} · p0 = {config.symbols}^-{config.digits}, a full leak is "
               f"{result.prior_bits:.1f} bits · {config.models:,} models × {config.steps} steps "
               f"per σ on {result.device} · {result.seconds:.1f} s")
    st.plotly_chart(figure(table, result), key=f"{key}figure-4")
    with st.container(key=f"{key}points"):
        st.dataframe(table, hide_index=True, column_config=COLUMNS,
                     column_order=[c for c in COLUMNS if c in table], placeholder="—")
    st.caption(f"Leakages in bits (log2). Interval: {config.confidence:.0%} bootstrap over the "
               f"{config.models:,} models.")
    _warnings(table, result)
