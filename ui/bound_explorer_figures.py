"""The Bound Explorer's figures (Stock et al. 2022, Figures 1 and 2) as small Plotly specs.

Speed is the point of this module's shape. The browser redraws a Plotly chart from scratch
whenever its spec changes (Streamlit gives it a new element id), and a chart's cost grows with
its panels, axes and text far more than with its points. So Figure 1 is one single-panel chart
per σ: a σ step redraws only the user's panel, and the comparison panels, sent unchanged, are
not redrawn. Figures are cached per setting, values go out rounded, the y = x guide is two
points, there is no mode bar, and no template of their own (Streamlit's theme styles them).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.bounds import DEFAULT_ORDERS, compute_rdp
from core.bounds.curves import leakage_vs_bits, leakage_vs_steps
from core.bounds.optimal import Mechanism, optimal_epsilon
from core.bounds.profile import tight_leakage_curve
from core.bounds.risk import run_profile
from core.bounds.reconstruction import LN2

BLUE, RED, GREEN, GRAY, YOURS = "#1f77b4", "#d62728", "#2ca02c", "gray", "#e8590c"
MIN_H, L_P0 = "min h (Mironov et al.)", "L(p0) (Stock et al.)"
PANEL_HEIGHT = 330
GUIDE = dict(color=GRAY, dash="dot", width=1)
CONFIG = {"displayModeBar": False}  # the mode bar is a third of a chart's drawing time; data: CSV


@st.cache_data(max_entries=256, show_spinner=False)
def step_rdp(q: float, sigma: float) -> np.ndarray:
    """RDP of one step on the default order grid (T steps: multiply by T)."""
    return compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=DEFAULT_ORDERS)


def step_rdp_at(q: float, sigma: float):
    """The one-step RDP at any orders, so that the curves refine each point's order."""
    return functools.partial(compute_rdp, q=q, noise_multiplier=sigma, steps=1)


@st.cache_data(max_entries=256, show_spinner=False)
def epsilon_at(q: float, sigma: float, steps: int, delta: float) -> float:
    """ε at δ after T steps, by Balle et al. (2020)'s conversion at the optimal order."""
    return optimal_epsilon(Mechanism(q, sigma, steps), delta=delta)[0]


def bits_axis(bits: int) -> np.ndarray:
    """Secret lengths shown in Figure 1: 1 … max(128, 2b), at most ~129 of them."""
    top = max(128, 2 * bits)
    return np.unique(np.linspace(1, top, min(top, 129)).round().astype(int))


@st.cache_data(max_entries=64, show_spinner=False)
def bits_curves(q: float, sigma: float, steps: int, bits: int) -> pd.DataFrame:
    """Figure 1's curves for one σ: L(2^-b) and min h(α, 2^-b) over ``bits_axis(bits)``."""
    return pd.DataFrame(leakage_vs_bits(orders=DEFAULT_ORDERS, step_rdp=step_rdp(q, sigma),
                                        steps=steps, bits=bits_axis(bits),
                                        step_rdp_at=step_rdp_at(q, sigma)))


@st.cache_data(max_entries=16, show_spinner="Composing the privacy loss distribution…")
def tight_curve(q: float, sigma: float, steps: int, bits: int) -> pd.DataFrame:
    """The PLD (privacy-profile) bound on ``bits_axis(bits)``; NaN where the composed
    distribution's precision cannot resolve it. The profile is composed once per (σ, q, T)
    (``run_profile``) and shared with the attack-risk readouts: a new b costs no composition."""
    axis = bits_axis(bits)
    curve = tight_leakage_curve(run_profile(sigma, q, steps), log_p0=-axis * LN2)
    return pd.DataFrame({"bits": axis, "tight_bits": np.where(curve.precision_limited, np.nan, curve.bits)})


def figure1_data(q: float, sigma: float, steps: int, bits: int, tight: bool) -> pd.DataFrame:
    """One panel's numbers (for the chart and the CSV)."""
    data = bits_curves(q, sigma, steps, bits)
    if tight:
        data = data.merge(tight_curve(q, sigma, steps, bits), on="bits")
    data.insert(0, "sigma", sigma)
    return data


def _rounded(values) -> list:
    """Plain lists, 3 decimals: smaller than float64 arrays, and cheaper for Streamlit to send
    on every run (plotly inspects each numpy array it serialises)."""
    return np.round(np.asarray(values, dtype=float), 3).tolist()


def _line(name: str, x, y, line: dict, legend: bool) -> dict:
    return dict(type="scatter", mode="lines", x=_rounded(x), y=_rounded(y), name=name,
                line=line, showlegend=legend, hovertemplate="%{y:.2f} bits<extra>" + name + "</extra>")


def _marker(axis: str, at: float, label: str, color: str = YOURS, log: bool = False) -> tuple[dict, dict]:
    """A dotted line across the plot at ``at`` on ``axis`` ("x": vertical) and its label
    (at its top, or its left end); on a log axis Plotly places annotations at log10(at)."""
    along = "y" if axis == "x" else "x"
    shape = {"type": "line", f"{axis}0": at, f"{axis}1": at, f"{along}ref": "paper", f"{along}0": 0,
             f"{along}1": 1, "line": dict(color=color, dash="dot")}
    text = {"text": label, axis: math.log10(at) if log else at, f"{along}ref": "paper",
            along: 1 if axis == "x" else 0, "showarrow": False, "xanchor": "left",
            "yanchor": "top" if axis == "x" else "bottom", "font": dict(color=color, size=11)}
    return shape, text


def _layout(title: dict, x_title: str, markers: list[tuple[dict, dict]], legend_y: float, **axes) -> dict:
    """Fixed margins (no automatic-margin pass, a large part of a draw in a browser profile)
    and few ticks; the legend sits inside, in the top-left corner that the curves leave empty."""
    return dict(
        height=PANEL_HEIGHT, margin=dict(l=50, r=12, t=36, b=44), template=None,
        title=dict(title, x=0.5, xanchor="center"),
        xaxis=dict(axes.get("xaxis", {}), title_text=x_title, automargin=False, nticks=6),
        yaxis=dict(axes.get("yaxis", {}), title_text="leaked bits", automargin=False, nticks=6),
        shapes=[shape for shape, _ in markers], annotations=[text for _, text in markers],
        legend=dict(x=0.02, y=legend_y, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.7)"),
    )


@st.cache_resource(max_entries=64, show_spinner=False)
def figure1_panel(q: float, sigma: float, steps: int, bits: int, delta: float, tight: bool,
                  yours: bool) -> go.Figure:
    """One σ of Figure 1: leaked bits vs secret length with y = x, min h, L(p0) (and the PLD
    bound), ε at δ in the title and the user's b marked; the user's own σ is titled "your σ"
    and carries the legend. Shared and never mutated (cache_resource): building and
    validating a Plotly figure costs more than its numbers."""
    data = figure1_data(q, sigma, steps, bits, tight)
    x = data["bits"].to_numpy()
    top = int(x[-1])
    traces = [_line("y = x (full leak)", [0, top], [0, top], GUIDE, yours),
              _line(MIN_H, x, data["traditional_bits"], dict(color=RED), yours),
              _line(L_P0, x, data["leakage_bits"], dict(color=BLUE), yours)]
    if tight:
        traces.append(_line("tight bound (PLD)", x, data["tight_bits"], dict(color=GREEN, dash="dash"), yours))
    title = f"σ = {sigma:g}, ε = {epsilon_at(q, sigma, steps, delta):.2f}"
    title = dict(text=f"<b>your {title}</b>", font=dict(color=YOURS)) if yours else dict(text=title)
    layout = _layout(title, "secret length b (bits)", [_marker("x", bits, f"b = {bits}")], 0.9,
                     xaxis=dict(range=[0, top]), yaxis=dict(range=[0, top * 1.02]))
    return go.Figure(traces, dict(layout, showlegend=yours))


@st.cache_data(max_entries=64, show_spinner=False)
def steps_curves(q: float, sigma: float, steps: int, bits: int) -> pd.DataFrame:
    """Figure 2's curves: L(2^-b) and min h(α, 2^-b) after 1 … 10 T steps (80 log-spaced)."""
    axis = np.unique(np.round(np.geomspace(1, max(10 * steps, 10), 80)))
    return pd.DataFrame(leakage_vs_steps(orders=DEFAULT_ORDERS, step_rdp=step_rdp(q, sigma),
                                         steps=axis, bits=bits, step_rdp_at=step_rdp_at(q, sigma)))


@st.cache_resource(max_entries=64, show_spinner=False)
def figure2(q: float, sigma: float, steps: int, bits: int) -> go.Figure:
    """Figure 2: leaked bits of the b-bit secret vs training steps at the user's σ, with the
    full-leak level b and the user's T marked."""
    data = steps_curves(q, sigma, steps, bits)
    x = data["steps"].to_numpy()
    traces = [_line(MIN_H, x, data["traditional_bits"], dict(color=RED), True),
              _line(L_P0, x, data["leakage_bits"], dict(color=BLUE), True)]
    markers = [_marker("y", bits, f"b = {bits} (full leak)", color=GRAY),
               _marker("x", steps, f"T = {steps:,}", log=True)]
    return go.Figure(traces, _layout(dict(text=f"b = {bits} bits, σ = {sigma:g}"), "training steps T",
                                     markers, 0.85, xaxis=dict(type="log")))
