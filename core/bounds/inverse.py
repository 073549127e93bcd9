"""The inverse problem: the smallest noise multiplier σ that meets a target, for given q and T.

Every d_α is non-increasing in σ, so L(p0), min h and ε are too (a minimum over α of
non-increasing functions); the smallest σ meeting a target is the root of target(σ) − goal,
found with Brent's method on log σ after bracketing it. Each target is the bound to the digit
(``core.bounds.optimal``), so that the σ found is the one ``summarize`` agrees with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import optimize

from core.bounds.optimal import Mechanism, optimal_epsilon, optimal_leakage
from core.bounds.rdp import DEFAULT_ORDERS, validate_mechanism
from core.bounds.reconstruction import LN2
from core.bounds.training_run import SIGMA_MAX, SIGMA_MIN
from core.errors import UserError

SIGMA_RANGE = (SIGMA_MIN, SIGMA_MAX)  # the search interval for σ: the lab's one σ range


@dataclass(frozen=True)
class SigmaSolution:
    """The smallest σ meeting the target, and the value (bits or ε) it then achieves."""

    sigma: float
    achieved: float
    target: float


def _smallest_sigma(value: Callable[[float], float], target: float, what: str) -> SigmaSolution:
    lo, hi = SIGMA_RANGE
    if value(hi) > target:
        raise UserError(f"no noise multiplier up to {hi:g} brings {what} to {target:g}; "
                        "raise the target or lower q or the number of steps")
    if value(lo) <= target:
        return SigmaSolution(sigma=lo, achieved=value(lo), target=target)
    log_sigma = optimize.brentq(lambda s: value(math.exp(s)) - target, math.log(lo), math.log(hi),
                                xtol=1e-6)
    sigma = math.exp(log_sigma) * (1 + 1e-6)  # just on the safe side of the root
    return SigmaSolution(sigma=sigma, achieved=value(sigma), target=target)


def sigma_for_leakage(*, q: float, steps: int, bits: float, target_bits: float,
                      orders: np.ndarray = DEFAULT_ORDERS) -> SigmaSolution:
    """Smallest σ with L(2^-bits) ≤ target_bits: a b-bit secret leaks at most that much."""
    validate_mechanism(q=q, noise_multiplier=1.0, steps=steps)
    if not (bits > 0 and 0 < target_bits < bits):
        raise UserError("the target leakage must be between 0 and the secret's length in bits")

    def leak(sigma: float) -> float:
        return optimal_leakage(Mechanism(q, sigma, steps), log_p0=-bits * LN2, orders=orders).bits

    return _smallest_sigma(leak, target_bits, f"the leakage of a {bits:g}-bit secret")


def sigma_for_epsilon(*, q: float, steps: int, delta: float, target_epsilon: float,
                      orders: np.ndarray = DEFAULT_ORDERS) -> SigmaSolution:
    """Smallest σ with ε(δ) ≤ target_epsilon (Balle et al. 2020 conversion)."""
    validate_mechanism(q=q, noise_multiplier=1.0, steps=steps)
    if not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise UserError("the target epsilon must be a positive number")

    def eps(sigma: float) -> float:
        return optimal_epsilon(Mechanism(q, sigma, steps), delta=delta, orders=orders)[0]

    return _smallest_sigma(eps, target_epsilon, "epsilon")
