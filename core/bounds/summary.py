"""Every bound for one DP-SGD setting and one b-bit secret: what the CLI prints and the page shows."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.bounds.last_iterate import last_iterate_epsilon
from core.bounds.optimal import Mechanism, optimal_epsilon, optimal_leakage, optimal_traditional
from core.bounds.profile import PLD_DISCRETIZATION, privacy_profile, tight_leakage_curve
from core.bounds.rdp import DEFAULT_ORDERS
from core.bounds.reconstruction import LN2
from core.errors import UserError


@dataclass(frozen=True)
class BoundsSummary:
    """Leakage bounds in bits for a secret of ``bits`` bits (p0 = 2^-bits) and ε at δ."""

    sigma: float
    q: float
    steps: int
    bits: float
    delta: float
    leakage_bits: float  # L(p0) of Stock et al., Eq. 3, capped at the secret length
    alpha_leakage: float
    traditional_bits: float  # min_α h(α, p0) of Mironov et al. 2019, capped likewise
    alpha_traditional: float
    posterior_log2_bound: float  # log2 p1 ≤ −bits + leakage_bits
    fully_leaks: bool  # the bound allows the whole secret to leak (p1 may reach 1)
    epsilon: float  # Balle et al. 2020 conversion at δ
    alpha_epsilon: float
    epsilon_standard: float
    warnings: list[str]
    tight_leakage_bits: float | None = None  # inf_ε e^ε p0 + δ(ε) over the PLD profile
    tight_precision_limited: bool | None = None
    epsilon_last_iterate: float | None = None  # a heuristic (Steinke et al. 2025), not a bound


def _edge_warning(name: str, alpha: float) -> str:
    return (f"{name}: the optimal order α = {alpha:g} is at the end of the orders searched; "
            "the true bound may be somewhat lower")


def summarize(*, sigma: float, q: float, steps: int, bits: float, delta: float,
              tight: bool = False, orders: np.ndarray = DEFAULT_ORDERS) -> BoundsSummary:
    """All bounds for noise σ, sampling rate q, ``steps`` steps, a b-bit secret and δ, each
    minimised over every order α > 1 (the grid ``orders``, then refined between its points)."""
    if not (math.isfinite(bits) and bits > 0):
        raise UserError(f"the secret length b must be a positive number of bits, got {bits}")
    mechanism = Mechanism(q=q, noise_multiplier=sigma, steps=steps)
    log_p0 = -bits * LN2
    leak = optimal_leakage(mechanism, log_p0=log_p0, orders=orders)
    trad = optimal_traditional(mechanism, log_p0=log_p0, orders=orders)
    eps, alpha_eps = optimal_epsilon(mechanism, delta=delta, orders=orders)
    eps_std, _ = optimal_epsilon(mechanism, delta=delta, conversion="standard", orders=orders)
    warnings = [_edge_warning(name, b.alpha) for name, b in (("L(p0)", leak), ("min h", trad))
                if b.at_edge]
    leakage_bits = min(leak.bits, bits)
    tight_bits = limited = None
    if tight:
        curve = tight_leakage_curve(
            privacy_profile(q=q, noise_multiplier=sigma, steps=steps, discretization=PLD_DISCRETIZATION),
            log_p0=np.array([log_p0]),
        )
        tight_bits, limited = float(curve.bits[0]), bool(curve.precision_limited[0])
        if limited:
            warnings.append("tight bound: below this prior the PLD accountant's precision runs "
                            "out (valid but loose); trust the RDP bound L here")
    return BoundsSummary(
        sigma=sigma, q=q, steps=steps, bits=bits, delta=delta,
        leakage_bits=leakage_bits, alpha_leakage=leak.alpha,
        traditional_bits=min(trad.bits, bits), alpha_traditional=trad.alpha,
        posterior_log2_bound=leakage_bits - bits, fully_leaks=leak.bits >= bits,
        epsilon=eps, alpha_epsilon=alpha_eps, epsilon_standard=eps_std, warnings=warnings,
        tight_leakage_bits=tight_bits, tight_precision_limited=limited,
        epsilon_last_iterate=last_iterate_epsilon(sigma=sigma, q=q, steps=steps, delta=delta),
    )
