"""Bound Explorer: what a DP-SGD run guarantees against reconstruction (Stock et al. 2022)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core.bounds.inverse import sigma_for_epsilon, sigma_for_leakage
from core.bounds import risk
from core.bounds.training_run import SIGMA_MAX, SIGMA_MIN
from core.bounds.summary import summarize
from core.errors import UserError
from ui import bound_explorer_figures as figures
from ui.text import plain

PRESETS = {
    "Paper, real-life canary (Fig. 1)": dict(sigma=0.6, q=2.81e-4, steps=186_000, bits=40, delta=3e-7),
    "Paper, Fig. 2 (σ = 0.4)": dict(sigma=0.4, q=2.81e-4, steps=186_000, bits=40, delta=3e-7),
    "Small data set (q = 0.01, 10k steps)": dict(sigma=1.0, q=0.01, steps=10_000, bits=20, delta=1e-5),
    "Full batch (q = 1, 100 steps)": dict(sigma=10.0, q=1.0, steps=100, bits=64, delta=1e-5),
}
NO_PRESET = "—"
DEFAULT = PRESETS["Paper, real-life canary (Fig. 1)"]
COMPARE_SIGMAS = [0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0]
# σ from the lab's one lower limit (core.bounds.training_run); the slider stops at 10, the CLI at
# SIGMA_MAX (a slider to 1,000 in steps of 0.01 could not be moved by hand)
RANGES = {"sigma": (SIGMA_MIN, 10.0), "q": (1e-6, 1.0), "steps": (1, 10_000_000), "bits": (1, 256),
          "delta": (1e-15, 0.5)}
SIGMA_STEP = 0.01
RISK_FPRS = (0.001, 0.01)   # the FPRs at which the tight toggle shows any attack's TPR cap


def _log_options(key: str, per_decade: int, integer: bool) -> list:
    """A log-spaced grid over the key's range (3 significant digits), plus every preset's value
    and the current one, so that no preset or link falls off the slider."""
    low, high = RANGES[key]
    grid = np.geomspace(low, high, int(round(math.log10(high / low) * per_decade)) + 1)
    values = {float(f"{v:.3g}") for v in grid} | {p[key] for p in PRESETS.values()} | {st.session_state[key]}
    return sorted(int(round(v)) if integer else v for v in values)


def _delta_options() -> list[float]:
    """δ from 1e-15 to 0.5 at 1, 2 and 5 per decade, plus the presets' and the current value."""
    grid = {float(f"{m}e{e}") for e in range(-15, 0) for m in (1, 2, 5)}
    return sorted(grid | {p["delta"] for p in PRESETS.values()} | {st.session_state["delta"]})


def scientific(value: float) -> str:
    """3e-7, 2.81e-4: the shortest scientific notation."""
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def _matching_preset(values: dict) -> str:
    return next((name for name, p in PRESETS.items() if all(values[k] == v for k, v in p.items())), NO_PRESET)


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
            st.error(plain(f"Ignored the link's {key}={text!r}: expected a number in "
                           f"[{low:g}, {high:g}]."))
            continue
        values[key] = int(round(value)) if key in ("steps", "bits") else value
    st.session_state.update(values, preset=_matching_preset(values))


def _apply_preset() -> None:
    """on_change of the preset box: note the choice (``_settle_preset`` acts on it)."""
    st.session_state["_preset_chosen"] = True


def _leave_preset() -> None:
    """on_change of every control: note the move (``_settle_preset`` acts on it)."""
    st.session_state["_control_moved"] = True


def _settle_preset() -> None:
    """Before the widgets: apply a chosen preset, or, once a control has moved, show the preset
    the values still match ("—" if none). A move wins: a key pressed right after a move that
    reset the box can arrive with the box's old value, which must not snap the controls back."""
    if st.session_state.pop("_control_moved", False):
        st.session_state["preset"] = _matching_preset(st.session_state)
    elif st.session_state.get("_preset_chosen"):
        st.session_state.update(PRESETS.get(st.session_state["preset"], {}))
    st.session_state.pop("_preset_chosen", None)


def _setting() -> dict:
    """The sidebar: a preset, σ, the training setting (q, T), the secret (b), δ, and Figure 1's
    options; the URL follows them."""
    with st.sidebar:
        st.selectbox("Preset", [NO_PRESET, *PRESETS], key="preset", on_change=_apply_preset)
        sigma = st.slider("Noise multiplier σ", *RANGES["sigma"], step=SIGMA_STEP, key="sigma",
                          on_change=_leave_preset, help="standard deviation of DP-SGD's noise over the clip norm")
        q = st.select_slider("Sampling rate q (log scale)", _log_options("q", 20, False), key="q",
                             format_func=lambda v: f"{v:.3g}", on_change=_leave_preset,
                             help="probability that a record is in a step's batch (batch size / data set size)")
        steps = st.select_slider("Training steps T (log scale)", _log_options("steps", 10, True), key="steps",
                                 format_func=lambda v: f"{v:,}", on_change=_leave_preset)
        bits = st.slider("Secret length b (bits)", *RANGES["bits"], key="bits", on_change=_leave_preset,
                         help="the secret is one of 2^b equally likely values: prior p0 = 2^-b")
        delta = st.select_slider("δ for ε (log scale)", _delta_options(), key="delta", format_func=scientific,
                                 on_change=_leave_preset, help="the δ of (ε, δ)-DP; only ε depends on it")
        compare = st.multiselect("Also compare σ in Figure 1", COMPARE_SIGMAS, default=[0.4, 1.0], key="compare")
        tight = st.toggle("Tight privacy-profile bound", key="tight",
                          help="Figure 1 also draws the PLD accountant's bound for your σ "
                               "(up to 2 s for each new σ, q and T)")
    st.query_params.from_dict({"sigma": sigma, "q": q, "steps": steps, "bits": bits, "delta": delta})
    return dict(sigma=sigma, q=q, steps=steps, bits=bits, delta=delta, compare=compare, tight=tight)


@st.cache_data(max_entries=128, show_spinner=False)
def cached_summary(sigma: float, q: float, steps: int, bits: float, delta: float):
    return summarize(sigma=sigma, q=q, steps=steps, bits=bits, delta=delta)


def _readout(s) -> None:
    c = st.columns(6)
    c[0].metric("ε at δ (Balle et al.)", f"{s.epsilon:.3g}",
                help=f"ε of (ε, δ)-DP at δ = {scientific(s.delta)}, converted from the RDP curve as in "
                     f"Balle et al. (2020); the standard conversion gives {s.epsilon_standard:.3g}")
    c[5].metric("Last-iterate ε (heuristic)", f"{s.epsilon_last_iterate:.3g}",
                help="Steinke et al. (ICLR 2025): the ε if only the final model is released and the "
                     "loss were linear, Binomial(T, q) + N(0, σ²T) against N(0, σ²T). A heuristic, "
                     "not a guarantee: audits of final models stayed below it, contrived losses "
                     "can pass it; the composed ε is the guarantee")
    c[1].metric("Leakage L (bits)", f"{s.leakage_bits:.2f}",
                help="L(p0), Stock et al. (2022) Eq. 3: at most this many of the secret's b bits leak, "
                     "log2(p1 / p0) with prior p0 = 2^-b")
    c[2].metric("Traditional min h (bits)", f"{s.traditional_bits:.2f}",
                help="min over α of h(α, p0), the RDP bound of Mironov et al. (2019), in bits")
    c[3].metric("Optimal order α", f"{s.alpha_leakage:.4g}",
                help="the Rényi order α > 1 at which L(p0) is smallest (the grid's best point, "
                     "refined between its neighbours)")
    c[4].metric("Posterior p1 ≤", f"2^{s.posterior_log2_bound:.1f}",
                help="p1, the attacker's chance of producing the secret after training: "
                     "p1 ≤ 2^(L − b), up from the prior p0 = 2^-b")
    b = f"{s.bits:g}"
    if s.fully_leaks:
        st.error(f"This {b}-bit secret can fully leak: the bound allows an attacker to produce it with "
                 "probability up to 1.")
    else:
        st.success(f"This {b}-bit secret leaks at most {s.leakage_bits:.1f} of its {b} bits: an attacker's "
                   f"chance of producing it rises from 2^-{b} to at most 2^{s.posterior_log2_bound:.1f}, "
                   f"while the usual guarantee is ε = {s.epsilon:.2f} at δ = {scientific(s.delta)}.")
    for warning in s.warnings:
        st.warning(plain(warning))


def _figure1(p: dict) -> None:
    """One chart per σ (see ui/bound_explorer_figures.py): a σ step redraws only the user's.
    The tight bound is composed for the user's σ alone: one privacy profile a rerun, on the
    script thread (at most 2^20-atom FFTs, under 2 s on 2 cores: bench/bench_tight_grid.py),
    cached per (σ, q, T) and shared with the attack-risk readouts."""
    sigmas = sorted({p["sigma"], *p["compare"]})
    tight = {sigma: p["tight"] and sigma == p["sigma"] for sigma in sigmas}
    for column, sigma in zip(st.columns(len(sigmas)), sigmas):
        column.plotly_chart(figures.figure1_panel(p["q"], sigma, p["steps"], p["bits"], p["delta"],
                                                  tight[sigma], yours=sigma == p["sigma"]),
                            config=figures.CONFIG)
    st.download_button("Figure 1 data (CSV)", lambda: pd.concat(
        [figures.figure1_data(p["q"], sigma, p["steps"], p["bits"], tight[sigma]) for sigma in sigmas]
    ).to_csv(index=False), "figure1.csv", "text/csv", on_click="ignore")
    if p["tight"]:
        st.caption("Tight bound (your σ's panel): p1 ≤ inf_ε e^ε p0 + δ(ε) over the whole privacy "
                   "profile (the privacy loss distribution, composed in log space with tilted "
                   "FFTs). It is drawn only where that composition is precise enough (usually "
                   "past 100 bits; a gap means its error bound is not small enough there); "
                   "beyond that trust L(p0).")
        _risk(p)


def _risk(p: dict) -> None:
    """What the run's privacy loss distribution caps for any attack (``core.bounds.risk``)."""
    sigma, q, steps = p["sigma"], p["q"], p["steps"]
    tpr = risk.tpr_cap(sigma, q, steps, RISK_FPRS)
    c = st.columns(len(RISK_FPRS) + 2)
    for column, fpr, cap in zip(c, RISK_FPRS, tpr):
        column.metric(f"Any attack's TPR at {fpr:.1%} FPR ≤".replace(".0%", "%"), f"{cap:.4f}",
                      help="the trade-off curve of the run's privacy loss distribution (f-DP, "
                           "Dong et al. 2022): no membership attack does better")
    c[-2].metric("Attack advantage ≤", f"{risk.advantage_cap(sigma, q, steps):.4f}",
                 help="max over attacks of TPR − FPR: the total variation distance between "
                      "training with and without the record")
    c[-1].metric(f"Reconstruction of a {p['bits']:g}-bit secret ≤",
                 f"{risk.reconstruction_cap(sigma, q, steps, p['bits']):.3g}",
                 help="the largest chance any attack has to produce the secret (Hayes et al. "
                      "2023), from the same distribution")


def _figure2(p: dict) -> None:
    st.plotly_chart(figures.figure2(p["q"], p["sigma"], p["steps"], p["bits"]), config=figures.CONFIG)
    st.download_button("Figure 2 data (CSV)", lambda: figures.steps_curves(
        p["q"], p["sigma"], p["steps"], p["bits"]).to_csv(index=False), "figure2.csv", "text/csv",
        on_click="ignore")


def _apply_sigma(sigma: float) -> None:
    st.session_state["sigma"] = sigma
    st.session_state["preset"] = _matching_preset(st.session_state)


def _offer_sigma(solved: float) -> None:
    """An "Apply σ" button when the σ slider can hold the solution (rounded up to its step, so the
    target still holds); otherwise say that it cannot."""
    low, high = RANGES["sigma"]
    sigma = max(low, math.ceil(round(solved / SIGMA_STEP, 6)) * SIGMA_STEP)
    if sigma > high:
        st.warning(f"σ = {solved:.4g} is above the σ slider's range ({low:g} to {high:g}), so it cannot be "
                   f"applied here; `python -m core bounds --sigma …` takes σ up to {SIGMA_MAX:g}.")
        return
    sigma = round(sigma, 2)
    why = "the slider's minimum" if sigma == low else "rounded up to the slider's step"
    if st.button(f"Apply σ = {sigma:g}", key="inverse_apply", on_click=_apply_sigma, args=(sigma,),
                 help=f"sets the σ slider ({why}; the target still holds)"):
        st.rerun()


def _solve(p: dict, kind: str, target: float):
    if kind.startswith("leaked"):
        sol = sigma_for_leakage(q=p["q"], steps=p["steps"], bits=p["bits"], target_bits=target)
        return sol, (f"σ = {sol.sigma:.4g} keeps the {p['bits']}-bit secret's leakage at "
                     f"{sol.achieved:.3g} ≤ {target:g} bits.")
    sol = sigma_for_epsilon(q=p["q"], steps=p["steps"], delta=p["delta"], target_epsilon=target)
    return sol, f"σ = {sol.sigma:.4g} gives ε = {sol.achieved:.3g} ≤ {target:g} at δ = {scientific(p['delta'])}."


@st.fragment
def _inverse_solver(p: dict) -> None:
    """The smallest σ meeting a target (a fragment: solving reruns only this part); the answer
    stays shown, with its Apply button, while the setting it was solved for is unchanged."""
    with st.form("inverse"):
        st.markdown(f"**Inverse problem**: the smallest σ for q = {p['q']:.3g} and T = {p['steps']:,}")
        kind = st.radio("Target", ["leaked bits of the b-bit secret", "ε at δ"], horizontal=True,
                        key="inverse_kind")
        target = st.number_input("Target value", value=10.0, step=0.5, key="inverse_target")
        setting = (p["q"], p["steps"], p["bits"], p["delta"], kind, target)
        if st.form_submit_button("Solve", key="inverse_solve"):
            try:
                st.session_state["_inverse"] = (setting, *_solve(p, kind, target))
            except UserError as err:
                st.session_state["_inverse"] = (setting, None, str(err))
    solved_for, solution, message = st.session_state.get("_inverse", (None, None, ""))
    if solved_for != setting:
        return
    if solution is None:
        st.error(plain(message))
        return
    st.success(plain(message))
    _offer_sigma(solution.sigma)


def _explorer(p: dict) -> None:
    """The readout and both figures for the sidebar's setting."""
    try:
        _readout(cached_summary(p["sigma"], p["q"], p["steps"], p["bits"], p["delta"]))
    except UserError as err:
        st.error(plain(err))
        return
    st.subheader("Figure 1 — leaked bits vs secret length")
    _figure1(p)
    st.subheader("Figure 2 — leaked bits vs training steps")
    _figure2(p)


st.title("Bound Explorer")
st.caption("How much can a DP-SGD run leak about a secret of b bits? The reconstruction bound "
           "L(p0) of Stock et al. (2022) next to the traditional RDP bound and the usual ε. "
           "The link in your address bar reproduces this view.")
_read_url()
_settle_preset()
page_setting = _setting()
_explorer(page_setting)
_inverse_solver(page_setting)
