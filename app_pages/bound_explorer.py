"""Bound Explorer: what a DP-SGD run guarantees against reconstruction (Stock et al. 2022)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle
from core.bounds.curves import leakage_vs_bits, leakage_vs_steps
from core.bounds.inverse import sigma_for_epsilon, sigma_for_leakage
from core.bounds.profile import privacy_profile, tight_leakage_curve
from core.bounds.reconstruction import LN2
from core.bounds.summary import summarize
from core.errors import UserError

PRESETS = {
    "Paper, real-life canary (Fig. 1)": dict(sigma=0.6, q=2.81e-4, steps=186_000, bits=40, delta=3e-7),
    "Paper, Fig. 2 (σ = 0.4)": dict(sigma=0.4, q=2.81e-4, steps=186_000, bits=40, delta=3e-7),
    "Small data set (q = 0.01, 10k steps)": dict(sigma=1.0, q=0.01, steps=10_000, bits=20, delta=1e-5),
    "Full batch (q = 1, 100 steps)": dict(sigma=10.0, q=1.0, steps=100, bits=64, delta=1e-5),
}
DEFAULT = PRESETS["Paper, real-life canary (Fig. 1)"]
COMPARE_SIGMAS = [0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0]
RANGES = {"sigma": (0.1, 10.0), "q": (1e-6, 1.0), "steps": (1, 10_000_000), "bits": (1, 256),
          "delta": (1e-15, 0.5)}


def _log_options(low: float, high: float, per_decade: int, extra: float, integer: bool) -> list:
    """A log-spaced grid (3 significant digits) that also holds ``extra``."""
    grid = np.geomspace(low, high, int(round(math.log10(high / low) * per_decade)) + 1)
    values = {float(f"{v:.3g}") for v in grid} | {extra}
    return sorted(int(round(v)) if integer else v for v in values)


def _read_url() -> None:
    """Seed the widgets from the URL's query parameters (once per session), checking each."""
    if st.session_state.get("_url_read"):
        return
    st.session_state["_url_read"] = True
    values = dict(DEFAULT)
    for key, (low, high) in RANGES.items():
        if key not in st.query_params:
            continue
        text = st.query_params[key]
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:
            st.error(f"Ignored the link's {key}={text!r}: expected a number in [{low:g}, {high:g}].")
            continue
        values[key] = int(round(value)) if key in ("steps", "bits") else value
    _apply(values)


def _apply(values: dict) -> None:
    for key, value in values.items():
        st.session_state[key] = value


@st.cache_data(max_entries=256, show_spinner=False)
def step_rdp(q: float, sigma: float) -> np.ndarray:
    """RDP of one step on the default order grid (T steps: multiply by T)."""
    return compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=DEFAULT_ORDERS)


@st.cache_data(max_entries=128, show_spinner=False)
def cached_summary(sigma: float, q: float, steps: int, bits: float, delta: float):
    return summarize(sigma=sigma, q=q, steps=steps, bits=bits, delta=delta)


@st.cache_data(max_entries=16, show_spinner="Composing the privacy loss distribution…")
def tight_curve(q: float, sigma: float, steps: int, bits: tuple) -> pd.DataFrame:
    curve = tight_leakage_curve(privacy_profile(q=q, noise_multiplier=sigma, steps=steps),
                                log_p0=-np.asarray(bits) * LN2)
    return pd.DataFrame({"bits": bits, "tight_bits": curve.bits,
                         "precision_limited": curve.precision_limited})


def _controls() -> dict:
    with st.sidebar:
        preset = st.selectbox("Preset", ["—", *PRESETS], key="preset")
        if preset != "—" and st.session_state.get("_preset_applied") != preset:
            _apply(PRESETS[preset])
        st.session_state["_preset_applied"] = preset
        sigma = st.slider("Noise multiplier σ", 0.1, 10.0, step=0.01, key="sigma")
        q = st.select_slider("Sampling rate q (log scale)", key="q",
                             options=_log_options(1e-6, 1.0, 20, st.session_state["q"], False),
                             format_func=lambda v: f"{v:.3g}")
        steps = st.select_slider("Training steps T (log scale)", key="steps",
                                 options=_log_options(1, 1e7, 10, st.session_state["steps"], True),
                                 format_func=lambda v: f"{v:,}")
        bits = st.slider("Secret length b (bits)", 1, 256, key="bits")
        delta = st.number_input("δ for ε", min_value=1e-15, max_value=0.5, format="%.2e", key="delta")
        compare = st.multiselect("Also compare σ in Figure 1", COMPARE_SIGMAS, default=[0.4, 1.0])
        tight = st.toggle("Tight privacy-profile bound (PLD, a few seconds per σ)", key="tight")
    st.query_params.from_dict({"sigma": sigma, "q": q, "steps": steps, "bits": bits, "delta": delta})
    return dict(sigma=sigma, q=q, steps=steps, bits=bits, delta=delta, compare=compare, tight=tight)


def _readout(s) -> None:
    c = st.columns(5)
    c[0].metric("ε at δ (Balle et al.)", f"{s.epsilon:.3g}", help=f"standard conversion: {s.epsilon_standard:.3g}")
    c[1].metric("Leakage L (bits)", f"{s.leakage_bits:.2f}", help="Stock et al., Eq. 3")
    c[2].metric("Traditional min h (bits)", f"{s.traditional_bits:.2f}", help="Mironov et al. 2019")
    c[3].metric("Optimal order α", f"{s.alpha_leakage:g}")
    c[4].metric("Posterior p1 ≤", f"2^{s.posterior_log2_bound:.1f}")
    b = f"{s.bits:g}"
    if s.fully_leaks:
        st.error(f"This {b}-bit secret can fully leak: the bound allows an attacker to produce it with "
                 "probability up to 1.")
    else:
        st.success(f"This {b}-bit secret leaks at most {s.leakage_bits:.1f} of its {b} bits: an attacker's "
                   f"chance of producing it rises from 2^-{b} to at most 2^{s.posterior_log2_bound:.1f}, "
                   f"while the usual guarantee is ε = {s.epsilon:.2f} at δ = {s.delta:.1e}.")
    for warning in s.warnings:
        st.warning(warning)


def _figure1(p: dict) -> pd.DataFrame:
    """One panel per σ, side by side. Plain dicts and hand-made axes: plotly's make_subplots
    and per-trace objects would cost ~100 ms of the ~100 ms budget of a slider move."""
    sigmas = sorted({p["sigma"], *p["compare"]})
    bits = np.arange(1, max(128, 2 * p["bits"]) + 1)
    traces, frames, layout = [], [], {"annotations": []}
    width = 1.0 / len(sigmas)
    for col, sigma in enumerate(sigmas):
        data = pd.DataFrame(leakage_vs_bits(orders=DEFAULT_ORDERS, step_rdp=step_rdp(p["q"], sigma),
                                            steps=p["steps"], bits=bits))
        if p["tight"]:
            data = data.merge(tight_curve(p["q"], sigma, p["steps"], tuple(bits)), on="bits")
        data.insert(0, "sigma", sigma)
        frames.append(data)
        axis = "" if col == 0 else str(col + 1)
        lines = [("y = x (full leak)", bits, dict(color="gray", dash="dot")),
                 ("min h (Mironov et al.)", data["traditional_bits"].to_numpy(), dict(color="#d62728")),
                 ("L(p0) (Stock et al.)", data["leakage_bits"].to_numpy(), dict(color="#1f77b4"))]
        if p["tight"]:
            reliable = data["tight_bits"].where(~data["precision_limited"]).to_numpy()
            lines.append(("tight profile bound (PLD)", reliable, dict(color="#2ca02c", dash="dash")))
        traces += [dict(type="scatter", x=bits, y=y, name=name, line=line, legendgroup=name,
                        showlegend=col == 0, xaxis=f"x{axis}", yaxis=f"y{axis}") for name, y, line in lines]
        layout[f"xaxis{axis}"] = dict(domain=[col * width + 0.03, (col + 1) * width - 0.03],
                                      title_text="secret length b (bits)")
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", matches="y" if col else None,
                                      title_text="leaked bits" if col == 0 else None)
        epsilon = epsilon_balle(orders=DEFAULT_ORDERS, rdp=step_rdp(p["q"], sigma) * p["steps"],
                                delta=p["delta"])[0]
        layout["annotations"].append(dict(text=f"σ = {sigma:g}, ε = {epsilon:.2f}", showarrow=False,
                                          xref="paper", yref="paper", x=(col + 0.5) * width, y=1.0,
                                          yanchor="bottom"))
    layout.update(height=380, margin=dict(t=40, b=10), legend=dict(orientation="h", y=-0.25))
    st.plotly_chart(go.Figure(traces, layout), key="figure1")
    return pd.concat(frames, ignore_index=True)


def _figure2(p: dict) -> pd.DataFrame:
    steps = np.unique(np.round(np.geomspace(1, max(10 * p["steps"], 10), 80)))
    data = pd.DataFrame(leakage_vs_steps(orders=DEFAULT_ORDERS, step_rdp=step_rdp(p["q"], p["sigma"]),
                                         steps=steps, bits=p["bits"]))
    traces = [dict(type="scatter", x=steps, y=data[column].to_numpy(), name=name, line=dict(color=color))
              for column, name, color in (("traditional_bits", "min h (Mironov et al.)", "#d62728"),
                                          ("leakage_bits", "L(p0) (Stock et al.)", "#1f77b4"))]
    guides = dict(type="line", line=dict(color="gray", dash="dot"))
    layout = dict(
        height=340, margin=dict(t=30, b=10), xaxis=dict(type="log", title_text="training steps"),
        yaxis=dict(title_text="leaked bits"), title=dict(text=f"b = {p['bits']} bits, σ = {p['sigma']:g}"),
        shapes=[dict(guides, xref="paper", x0=0, x1=1, y0=p["bits"], y1=p["bits"]),
                dict(guides, yref="paper", x0=p["steps"], x1=p["steps"], y0=0, y1=1)],
        annotations=[dict(text=f"b = {p['bits']} (full leak)", xref="paper", x=0, y=p["bits"],
                          xanchor="left", yanchor="bottom", showarrow=False),
                     dict(text=f"T = {p['steps']:,}", x=math.log10(p["steps"]), yref="paper", y=1,
                          showarrow=False, yanchor="bottom")],
    )
    st.plotly_chart(go.Figure(traces, layout), key="figure2")
    return data


def _inverse_form(p: dict) -> None:
    with st.form("inverse"):
        st.markdown(f"**Inverse problem**: the smallest σ for q = {p['q']:.3g} and T = {p['steps']:,}")
        kind = st.radio("Target", ["leaked bits of the b-bit secret", "ε at δ"], horizontal=True,
                        key="inverse_kind")
        target = st.number_input("Target value", value=10.0, step=0.5, key="inverse_target")
        if st.form_submit_button("Solve", key="inverse_solve"):
            try:
                if kind.startswith("leaked"):
                    sol = sigma_for_leakage(q=p["q"], steps=p["steps"], bits=p["bits"], target_bits=target)
                    st.success(f"σ = {sol.sigma:.4g} keeps the {p['bits']}-bit secret's leakage at "
                               f"{sol.achieved:.3g} ≤ {target:g} bits.")
                else:
                    sol = sigma_for_epsilon(q=p["q"], steps=p["steps"], delta=p["delta"], target_epsilon=target)
                    st.success(f"σ = {sol.sigma:.4g} gives ε = {sol.achieved:.3g} ≤ {target:g} at δ = {p['delta']:.1e}.")
            except UserError as err:
                st.error(str(err))


st.title("Bound Explorer")
st.caption("How much can a DP-SGD run leak about a secret of b bits? The reconstruction bound "
           "L(p0) of Stock et al. (2022) next to the traditional RDP bound and the usual ε. "
           "The link in your address bar reproduces this view.")
_read_url()
params = _controls()
try:
    _readout(cached_summary(params["sigma"], params["q"], params["steps"], params["bits"], params["delta"]))
    st.subheader("Figure 1 — leaked bits vs secret length")
    fig1 = _figure1(params)
    st.download_button("Figure 1 data (CSV)", fig1.to_csv(index=False), "figure1.csv", "text/csv")
    st.subheader("Figure 2 — leaked bits vs training steps")
    fig2 = _figure2(params)
    st.download_button("Figure 2 data (CSV)", fig2.to_csv(index=False), "figure2.csv", "text/csv")
    if params["tight"]:
        st.caption("Tight bound: p1 ≤ inf_ε e^ε p0 + δ(ε) over the whole privacy profile (PLD accountant). "
                   "It is drawn only where the accountant is precise enough (its floor is about 1e-10, so "
                   "usually up to ~30 bits); beyond that trust L(p0).")
    _inverse_form(params)
except UserError as err:
    st.error(str(err))
