"""The data behind the Bound Explorer's figures (Stock et al. 2022, Figures 1 and 2).

Both take the RDP of a single step, d_α(1); T steps compose to T·d_α(1), so a whole sweep
over secret lengths or step counts costs one RDP evaluation on the grid. Given
``step_rdp_at`` (the one-step RDP at any orders, called as ``step_rdp_at(orders=...)``, e.g.
``functools.partial(compute_rdp, q=q, noise_multiplier=σ, steps=1)``), every point's order is
refined between grid points (``core.bounds.optimal``), all points at once: about ten more RDP
evaluations of one order per point.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from core.bounds.optimal import refine_minimum
from core.bounds.reconstruction import (
    LN2,
    leakage_curve,
    leakage_objective,
    traditional_curve,
    traditional_objective,
)

StepRdp = Callable[..., np.ndarray]


def _minimum(curve, objective, *, orders, step_rdp, steps, log_inv,
             step_rdp_at: StepRdp | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point (one per entry of ``steps`` or ``log_inv``): the minimum over the grid's orders,
    or over every α > 1 with ``step_rdp_at``; its order and edge flag."""
    steps, log_inv = np.broadcast_arrays(np.asarray(steps, dtype=float), np.asarray(log_inv, dtype=float))
    rdp = steps[:, None] * step_rdp[None, :]
    if step_rdp_at is None:
        return curve(orders=orders, rdp=rdp, log_p0=-log_inv)

    def values_at(rows: np.ndarray, alphas: np.ndarray) -> np.ndarray:
        return objective(alphas, steps[rows] * step_rdp_at(orders=alphas), log_inv[rows])

    return refine_minimum(values_at, orders, objective(orders, rdp, log_inv[:, None]))


def leakage_vs_bits(*, orders: np.ndarray, step_rdp: np.ndarray, steps: int, bits: np.ndarray,
                    step_rdp_at: StepRdp | None = None) -> dict[str, np.ndarray]:
    """Figure 1: L(2^-b) and min h(α, 2^-b) in bits for every secret length b in ``bits``."""
    bits = np.asarray(bits, dtype=float)
    common = dict(orders=orders, step_rdp=step_rdp, steps=steps, log_inv=bits * LN2, step_rdp_at=step_rdp_at)
    leak, alpha, edge = _minimum(leakage_curve, leakage_objective, **common)
    trad = _minimum(traditional_curve, traditional_objective, **common)[0]
    return {"bits": bits, "leakage_bits": np.minimum(leak / LN2, bits),
            "traditional_bits": np.minimum(trad / LN2, bits), "alpha_leakage": alpha,
            "alpha_at_edge": edge}


def leakage_vs_steps(*, orders: np.ndarray, step_rdp: np.ndarray, steps: np.ndarray, bits: float,
                     step_rdp_at: StepRdp | None = None) -> dict[str, np.ndarray]:
    """Figure 2: L(2^-b) and min h(α, 2^-b) in bits for a b-bit secret after each step count."""
    steps = np.asarray(steps, dtype=float)
    common = dict(orders=orders, step_rdp=step_rdp, steps=steps, log_inv=bits * LN2, step_rdp_at=step_rdp_at)
    leak = _minimum(leakage_curve, leakage_objective, **common)[0]
    trad = _minimum(traditional_curve, traditional_objective, **common)[0]
    return {"steps": steps, "leakage_bits": np.minimum(leak / LN2, bits),
            "traditional_bits": np.minimum(trad / LN2, bits)}
