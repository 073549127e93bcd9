"""RDP of the Poisson-subsampled Gaussian mechanism (DP-SGD), vectorised over orders.

Same math as Opacus' ``opacus/accountants/analysis/rdp.py`` (Mironov, Talwar, Zhang 2019,
"Rényi Differential Privacy of the Sampled Gaussian Mechanism", Section 3.3), but evaluated
for a whole grid of orders at once and entirely in log space, so it stays finite where Opacus'
``special.binom`` overflows (integer orders above ~1000).

One step with sampling rate q and noise multiplier σ has d_α = log(A_α) / (α − 1); T steps
compose to T·d_α. For q = 1 the mechanism is the plain Gaussian: d_α = α / (2σ²).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from core.errors import UserError

# Fractional orders near 1 (Opacus' default grid), every integer to 64, then integers
# spaced geometrically up to 4096: long secrets (large log 1/p0) need large orders.
DEFAULT_ORDERS: np.ndarray = np.unique(
    np.concatenate(
        [
            [1.05],
            1.0 + np.arange(1, 100) / 10.0,
            np.arange(11, 65),
            np.round(np.geomspace(72, 4096, 36)),
        ]
    )
)

_SERIES_STOP = -30.0  # Opacus stops the fractional series at the first term below e^-30


def validate_mechanism(*, q: float, noise_multiplier: float, steps: float) -> None:
    """Raise ``UserError`` unless 0 < q ≤ 1, σ > 0 and steps ≥ 1 (all finite)."""
    if not (math.isfinite(q) and 0.0 < q <= 1.0):
        raise UserError(f"sampling rate q must be in (0, 1], got {q}")
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0.0):
        raise UserError(f"noise multiplier sigma must be a positive number, got {noise_multiplier}")
    if not (math.isfinite(steps) and steps >= 1):
        raise UserError(f"steps must be at least 1, got {steps}")


def compute_rdp(*, q: float, noise_multiplier: float, steps: int, orders: np.ndarray) -> np.ndarray:
    """RDP d_α of ``steps`` compositions of the sampled Gaussian mechanism at every order α > 1.

    Integer α: log A_α = log(1 + Σ_{i≥2} C(α,i) q^i (1−q)^{α−i} (e^{(i²−i)/(2σ²)} − 1)), a
    log-sum-exp of positive terms (the binomial sum of the i = 0, 1 terms is exactly 1, which
    keeps full relative precision when d_α is tiny). Fractional α: the two-sided series of
    Mironov et al. (2019), Section 3.3, truncated as Opacus truncates it.
    """
    validate_mechanism(q=q, noise_multiplier=noise_multiplier, steps=steps)
    alphas = np.asarray(orders, dtype=float)
    if alphas.ndim != 1 or not np.all(alphas > 1.0):
        raise UserError("orders must be a 1-D array of numbers above 1")
    sigma = float(noise_multiplier)
    if q == 1.0:
        return alphas / (2.0 * sigma**2) * steps
    rdp = np.empty_like(alphas)
    is_int = alphas == np.round(alphas)
    rdp[is_int] = _log_a_int(q, sigma, alphas[is_int].astype(np.int64))
    rdp[~is_int] = _log_a_frac(q, sigma, alphas[~is_int])
    return rdp / (alphas - 1.0) * steps


def _log_binom(alpha: np.ndarray, i: np.ndarray) -> np.ndarray:
    """log |C(α, i)| for real α ≥ 0 and integer i ≥ 0."""
    return special.gammaln(alpha + 1.0) - special.gammaln(i + 1.0) - special.gammaln(alpha - i + 1.0)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x > 0, stable for both tiny and huge x."""
    return x + np.log(-np.expm1(-x))


def _log_a_int(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_α for integer orders ≥ 2, all orders in one flat, segmented log-sum-exp."""
    if alphas.size == 0:
        return np.empty(0)
    counts = alphas - 1  # terms i = 2 .. α
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    alpha = np.repeat(alphas, counts).astype(float)
    i = (np.arange(counts.sum()) - np.repeat(starts, counts) + 2).astype(float)
    terms = (
        _log_binom(alpha, i)
        + i * math.log(q)
        + (alpha - i) * math.log1p(-q)
        + _log_expm1((i * i - i) / (2.0 * sigma**2))
    )
    peak = np.maximum.reduceat(terms, starts)
    log_rest = peak + np.log(np.add.reduceat(np.exp(terms - np.repeat(peak, counts)), starts))
    return np.logaddexp(0.0, log_rest)  # log(1 + rest)


def _log_a_frac(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_α for fractional orders: A_α = Σ_i C(α,i) (S0_i + S1_i), Mironov et al. (2019).

    Terms i = 0, 1, ... are evaluated in chunks for all still-running orders; each order
    stops at its first i where both log-terms fall below −30 (Opacus' rule). The signed sum
    is kept as peak + log(scaled sum) so it never overflows.
    """
    n = alphas.size
    peak = np.full(n, -np.inf)
    scaled = np.zeros(n)
    running = np.ones(n, dtype=bool)
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    log_q, log_1mq = math.log(q), math.log1p(-q)
    start, width = 0, 64
    while running.any():
        rows = np.flatnonzero(running)
        alpha = alphas[rows, None]
        i = np.arange(start, start + width, dtype=float)[None, :]
        j = alpha - i
        log_coef = _log_binom(alpha, i)
        sign = special.gammasgn(j + 1.0)  # sign of C(α, i)
        log_s0 = (log_coef + i * log_q + j * log_1mq + (i * i - i) / (2 * sigma**2)
                  + special.log_ndtr((z0 - i) / sigma))
        log_s1 = (log_coef + j * log_q + i * log_1mq + (j * j - j) / (2 * sigma**2)
                  + special.log_ndtr((j - z0) / sigma))
        below = np.maximum(log_s0, log_s1) < _SERIES_STOP
        keep = np.cumsum(below, axis=1) == 0  # terms before the first one below e^-30
        log_s0 = np.where(keep, log_s0, -np.inf)
        log_s1 = np.where(keep, log_s1, -np.inf)
        new_peak = np.maximum(peak[rows], np.maximum(log_s0, log_s1).max(axis=1))
        chunk = sign * (np.exp(log_s0 - new_peak[:, None]) + np.exp(log_s1 - new_peak[:, None]))
        scaled[rows] = scaled[rows] * np.exp(peak[rows] - new_peak) + chunk.sum(axis=1)
        peak[rows] = new_peak
        running[rows[below.any(axis=1)]] = False
        start, width = start + width, min(2 * width, 4096)
    return peak + np.log(scaled)
