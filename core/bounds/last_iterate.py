"""The last-iterate heuristic ε of DP-SGD (Steinke, Nasr, Ganesh, Balle, Choquette-Choo,
Jagielski, Hayes, Thakurta, Smith & Terzis, "The Last Iterate Advantage: Empirical Auditing and
Principled Heuristic Analysis of Differentially Private SGD", ICLR 2025).

A heuristic, not a guarantee: if only the final model is released and every loss were linear,
the final model would show a canary only through the sum of its clipped gradients over the T
steps. With the clip norm as unit, a step includes the canary with probability q, so the sum is

    P = Binomial(T, q) + N(0, σ²T)   (trained with the canary)   against   Q = N(0, σ²T),

and the heuristic δ(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)), with the hockey-stick divergence
H_γ(P‖Q) = ∫ (p − γq)₊. The paper finds it above every audit of a final model it ran, yet it
can be beaten by contrived losses; DP-SGD's proven ε (composition) stays the guarantee. At T = 1
it is the subsampled Gaussian's exact ε, at q = 1 the full-batch Gaussian's, for any T.

The integral, in closed form: log(p/q)(x) = log Σ_k w_k exp((k x − k²/2)/s²), s² = σ²T and
w_k = P[Binomial(T, q) = k], is increasing in x, so {p > e^ε q} is a half-line (x*, ∞) and
{q > e^ε p} one (−∞, y*) (roots by Brent's method); on them each Gaussian integrates to a normal
tail (scipy.stats):

    H(P‖Q) = Σ_k w_k Φ̄((x* − k)/s) − e^ε Φ̄(x*/s),   H(Q‖P) = Φ(y*/s) − e^ε Σ_k w_k Φ((y* − k)/s).

Binomial outcomes of probability below 1e-30 are left out (``LOG_TAIL``). ε(δ) is the root
of log δ(ε) = log δ, which decreases in ε.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special, stats

LOG_TAIL = math.log(1e-30)   # binomial outcomes less likely than this are left out
XTOL = 1e-12       # of the crossing points x*, y* (in units of the clip norm)


@functools.lru_cache(maxsize=64)
def _mixture(q: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The outcomes k of Binomial(T, q) of probability at least 1e-30, and log w_k: a window
    around the mode, doubled until the pmf at both ends is below that (the pmf is log-concave,
    so what lies outside is of the order of 1e-30)."""
    mode, width = math.floor((steps + 1) * q), 10 * math.ceil(math.sqrt(steps * q) + 1)
    while True:
        low, high = max(mode - width, 0), min(mode + width, steps)
        ends = stats.binom.logpmf([low, high], steps, q)
        if (low == 0 or ends[0] < LOG_TAIL) and (high == steps or ends[1] < LOG_TAIL):
            break
        width *= 2
    k = np.arange(low, high + 1, dtype=float)
    log_w = stats.binom.logpmf(k, steps, q)
    kept = log_w >= LOG_TAIL
    return k[kept], log_w[kept]


def _log_ratio(x: float, k: np.ndarray, log_w: np.ndarray, s: float) -> float:
    """log p(x)/q(x) of the mixture P against Q = N(0, s²)."""
    return float(special.logsumexp(log_w + (k * x - k * k / 2) / (s * s)))


def _crossing(level: float, k, log_w, s) -> float | None:
    """The x where log p/q = ``level`` (increasing in x), or None when it never gets there."""
    if k[0] == 0 and log_w[0] >= level:   # as x → −∞ the ratio falls to w_0, never below
        return None
    low, high = -(s + k[-1]), s + k[-1]
    while _log_ratio(low, k, log_w, s) >= level:
        low *= 2
    while _log_ratio(high, k, log_w, s) <= level:
        high *= 2
    return optimize.brentq(lambda x: _log_ratio(x, k, log_w, s) - level, low, high, xtol=XTOL)


def _log_difference(log_a: float, log_b: float) -> float:
    """log(e^a − e^b), −∞ when b ≥ a."""
    return log_a + math.log(-math.expm1(log_b - log_a)) if log_b < log_a else -math.inf


def log_hockey_stick(epsilon: float, *, sigma: float, q: float, steps: int) -> float:
    """log δ(ε) = log max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)) of the heuristic's pair (module doc),
    in logs so that neither a large ε nor a tiny δ overflows."""
    k, log_w = _mixture(q, steps)
    if k[-1] == 0:    # the canary never sampled: P = Q
        return -math.inf
    s = sigma * math.sqrt(steps)
    x = _crossing(epsilon, k, log_w, s)
    remove = _log_difference(float(special.logsumexp(log_w + stats.norm.logsf((x - k) / s))),
                             epsilon + float(stats.norm.logsf(x / s)))
    y = _crossing(-epsilon, k, log_w, s)
    if y is None:
        return remove
    log_p_below = float(special.logsumexp(log_w + stats.norm.logcdf((y - k) / s)))
    add = _log_difference(float(stats.norm.logcdf(y / s)), epsilon + log_p_below)
    return max(remove, add)


def last_iterate_epsilon(*, sigma: float, q: float, steps: int, delta: float) -> float:
    """The heuristic ε at δ of the last iterate of DP-SGD with σ, q and ``steps`` (module doc)."""
    def gap(epsilon: float) -> float:
        log_delta = log_hockey_stick(epsilon, sigma=sigma, q=q, steps=steps)
        return max(log_delta, -1e300) - math.log(delta)

    if gap(0.0) <= 0:
        return 0.0
    high = 1.0
    while gap(high) > 0:
        high *= 2
    return float(optimize.brentq(gap, 0.0 if high == 1.0 else high / 2, high, xtol=1e-9))
