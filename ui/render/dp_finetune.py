"""Renderer of a DP fine-tuning result: the paper's Figure 6 and utility and leakage per σ."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.dp.finetune import DPFinetuneResult
from ui.text import plain

COLORS = ["#000000", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _number(label: str, format: str = "%.2f", help: str | None = None):
    return st.column_config.NumberColumn(label, format=format, help=help)


UTILITY_COLUMNS = {  # short headers and rounded numbers: every column fits the page
    "sigma": st.column_config.TextColumn("σ"),
    "validation_perplexity": _number("perplexity", "%.1f", "validation perplexity"),
    "final_secrecy_bits": _number("secrecy bits", help="log2(1/p1) after the last step"),
    "measured_leakage_bits": _number("leaked bits", help="prior bits − secrecy bits"),
    "allowed_bits (one record)": _number("allowed bits, 1 record",
                                         help="L(p0) of one record for the same σ, q, steps"),
    "allowed_bits (all copies)": _number("allowed bits, all copies",
                                         help="the bound for the canary's copies together"),
    "epsilon": _number("ε", help="ε at the config's δ (Balle et al. 2020)"),
    "opacus_epsilon": _number("Opacus ε", help="from Opacus' own RDP accountant"),
    "below_bound": st.column_config.CheckboxColumn("below bound"),
    "train_s": _number("train s", "%.1f"),
}


def curve_table(result: DPFinetuneResult) -> pd.DataFrame:
    return pd.DataFrame([{"sigma": r.sigma} | vars(p) for r in result.runs for p in r.points])


def utility_table(result: DPFinetuneResult) -> pd.DataFrame:
    rows = [{"sigma": "base model", "validation_perplexity": result.base_validation_perplexity,
             "final_secrecy_bits": result.base_secrecy_bits,
             "measured_leakage_bits": result.prior_bits - result.base_secrecy_bits}]
    rows += [{
        "sigma": f"{r.sigma:g}", "validation_perplexity": r.validation_perplexity,
        "final_secrecy_bits": r.final_secrecy_bits,
        "measured_leakage_bits": r.measured_leakage_bits,
        "allowed_bits (one record)": r.allowed_bits,
        "allowed_bits (all copies)": r.points[-1].group_allowed_bits if r.points else None,
        "epsilon": r.points[-1].epsilon if r.points else None, "opacus_epsilon": r.opacus_epsilon,
        "below_bound": r.below_bound, "train_s": r.seconds} for r in result.runs]
    return pd.DataFrame(rows)


def figure(curves: pd.DataFrame, prior: float) -> go.Figure:
    """The paper's Figure 6: secrecy log2(1/p1) over steps per σ, with the prior and the bound."""
    fig = go.Figure()
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
                      yaxis_rangemode="tozero", height=460, margin=dict(t=30),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def render(result: DPFinetuneResult, *, key: str) -> None:
    if not result.runs:
        st.warning("The run stopped before the first σ had a measurement: nothing to show.")
        return
    st.caption(f"Canary “{plain(result.canary)}” ({result.secret_tokens} secret tokens) · "
               f"{result.n_records:,} records, q = {result.q:.3g} · on {result.device} · "
               f"{result.seconds:.0f} s · run {result.run_hash}")
    st.plotly_chart(figure(curve_table(result), result.prior_bits), key=f"{key}figure-6")
    st.markdown("**Utility and leakage per σ** (measured leakage = prior bits − secrecy bits)")
    with st.container(key=f"{key}utility"):
        st.dataframe(utility_table(result), hide_index=True, column_config=UTILITY_COLUMNS,
                     column_order=list(UTILITY_COLUMNS), placeholder="—")
    modes = ", ".join(f"{layer}: {mode}" for layer, mode in result.clipping_modes.items())
    resumed = "".join(f" σ = {r.sigma:g} resumed from step {r.resumed_from_step}."
                      for r in result.runs if r.resumed_from_step)
    st.caption(f"Opacus grad_sample_mode = {result.grad_sample_mode} ({modes}).{resumed}")
    above = [r.sigma for r in result.runs if r.below_bound is False]
    if above:
        st.warning(f"At σ = {', '.join(f'{s:g}' for s in above)} the measured leakage exceeds the "
                   "one-record bound: the canary's copies are several records, which only the "
                   "all-copies bound covers.")
    if result.stopped_early:
        st.warning("Stopped early: run it again with the same settings to resume from the last "
                   "checkpoint.")
