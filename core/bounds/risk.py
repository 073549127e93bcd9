"""Attack-risk readouts from the accountant: what any attack on a DP-SGD run can reach at most.

The trade-off function f of the run (Dong, Roth & Su 2019, "Gaussian Differential Privacy"):
f(α) is the smallest false-negative rate of any membership test at false-positive rate α, so
no attack exceeds TPR = 1 − f(α) at FPR α. It is computed from the run's privacy loss
distribution (``core.bounds.profile``, the REMOVE pair P = with the record, Q = without):
1 − T(P, Q)(α) = inf_ε e^ε α + δ(ε) (Kulynych et al. 2024, "Attack-Aware Noise Calibration",
Algorithm 1; riskcal computes the same from dp-accounting's PLD). Membership is add-or-remove,
so f is the symmetrisation of T(P, Q) and its inverse T(Q, P) (Dong et al., Def. F.1):
with ᾱ = Q[L > 0] and f(ᾱ) = P[L ≤ 0], f = T(P, Q) below ᾱ, the line ᾱ + f(ᾱ) − α up to
f(ᾱ), and T(Q, P) above; or max(T(P, Q), T(Q, P)) where ᾱ > f(ᾱ).

The advantage max_α TPR − FPR is the total variation δ(0) (symmetric in P and Q). The
reconstruction success of a secret with prior p0 is at most 1 − T(P, Q)(p0) (Hayes, Mahloujifar
& Balle 2023), the tight bound of the profile.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from core.bounds.profile import (
    PrivacyProfile,
    delta_for_epsilon,
    log_tpr_cap,
    privacy_profile,
)
from core.bounds.reconstruction import LN2
from core.errors import UserError


@functools.lru_cache(maxsize=8)
def run_profile(sigma: float, q: float, steps: int) -> PrivacyProfile:
    """The run's privacy profile, cached per (σ, q, T): a page asks for several FPRs."""
    return privacy_profile(q=q, noise_multiplier=sigma, steps=steps)


def _check_fpr(fpr) -> np.ndarray:
    fpr = np.asarray(fpr, dtype=float)
    if not np.all((fpr >= 0.0) & (fpr <= 1.0)):
        raise UserError("the false-positive rate must be in [0, 1]")
    return fpr


def _vertices(profile: PrivacyProfile) -> tuple[np.ndarray, np.ndarray]:
    """The corners (FPR, TPR) = (R_k, S_k + slack) of T(P, Q)'s curve, FPR increasing."""
    log_fpr = profile.log_tail_discounted[::-1]
    return np.exp(log_fpr), np.exp(log_tpr_cap(profile, log_fpr)[0])


def remove_tpr(profile: PrivacyProfile, fpr) -> np.ndarray:
    """1 − T(P, Q)(α): the largest TPR at FPR α of a test for the record being in the run."""
    with np.errstate(divide="ignore"):
        return np.exp(log_tpr_cap(profile, np.log(_check_fpr(fpr)))[0])


def tradeoff_tpr(profile: PrivacyProfile, fpr) -> np.ndarray:
    """1 − f(α) with f the add-or-remove trade-off (symmetrised, Dong et al. Def. F.1)."""
    fpr = _check_fpr(fpr)
    tpr = remove_tpr(profile, fpr)
    corner_fpr, corner_tpr = _vertices(profile)  # 1 − T(Q, P)(α) = 1 − (T(P, Q))⁻¹(α):
    inverse_tpr = 1.0 - np.interp(1.0 - fpr, corner_tpr, corner_fpr)  # 1 − T(Q, P)(α)
    above = profile.losses > 0
    # Q[L > 0], at most 1 (the masses of an imprecise profile could sum past it)
    log_alpha_bar = np.logaddexp.reduce((profile.log_probs - profile.losses)[above])
    alpha_bar = min(1.0, float(np.exp(log_alpha_bar)))
    f_alpha_bar = 1.0 - float(remove_tpr(profile, alpha_bar))
    if alpha_bar > f_alpha_bar:
        return np.minimum(tpr, inverse_tpr)
    line = 1.0 - (alpha_bar + f_alpha_bar - fpr)
    return np.where(fpr < alpha_bar, tpr, np.where(fpr <= f_alpha_bar, line, inverse_tpr))


def tpr_cap(sigma: float, q: float, steps: int, fpr) -> np.ndarray:
    """The largest TPR any membership attack on the run reaches at FPR ``fpr`` (vectorised)."""
    return tradeoff_tpr(run_profile(float(sigma), float(q), int(steps)), fpr)


def advantage_cap(sigma: float, q: float, steps: int) -> float:
    """max over FPR of TPR − FPR for any membership attack: δ(0) = TV(P, Q), at most 1 (an
    imprecise profile's error bounds could carry δ(0) past it)."""
    return min(1.0, float(delta_for_epsilon(run_profile(float(sigma), float(q), int(steps)), 0.0)))


def reconstruction_cap(sigma: float, q: float, steps: int, bits: float) -> float:
    """The largest success probability of reconstructing a b-bit secret (prior 2^-b):
    1 − T(P, Q)(2^-b) (Hayes et al. 2023); precise where ``tight_leakage_curve`` says so."""
    if not (math.isfinite(bits) and bits > 0):
        raise UserError(f"the secret length b must be a positive number of bits, got {bits}")
    profile = run_profile(float(sigma), float(q), int(steps))
    return float(np.exp(log_tpr_cap(profile, np.array(-bits * LN2))[0]))
