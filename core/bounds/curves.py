"""The data behind the Bound Explorer's figures (Stock et al. 2022, Figures 1 and 2).

Both take the RDP of a single step, d_α(1); T steps compose to T·d_α(1), so a whole sweep
over secret lengths or step counts costs one RDP evaluation.
"""

from __future__ import annotations

import numpy as np

from core.bounds.reconstruction import LN2, leakage_curve, traditional_curve


def leakage_vs_bits(*, orders: np.ndarray, step_rdp: np.ndarray, steps: int,
                    bits: np.ndarray) -> dict[str, np.ndarray]:
    """Figure 1: L(2^-b) and min h(α, 2^-b) in bits for every secret length b in ``bits``."""
    bits = np.asarray(bits, dtype=float)
    rdp = step_rdp * steps
    leak, alpha, edge = leakage_curve(orders=orders, rdp=rdp, log_p0=-bits * LN2)
    trad, _, _ = traditional_curve(orders=orders, rdp=rdp, log_p0=-bits * LN2)
    return {"bits": bits, "leakage_bits": np.minimum(leak / LN2, bits),
            "traditional_bits": np.minimum(trad / LN2, bits), "alpha_leakage": alpha,
            "alpha_at_edge": edge}


def leakage_vs_steps(*, orders: np.ndarray, step_rdp: np.ndarray, steps: np.ndarray,
                     bits: float) -> dict[str, np.ndarray]:
    """Figure 2: L(2^-b) and min h(α, 2^-b) in bits for a b-bit secret after each step count."""
    steps = np.asarray(steps, dtype=float)
    rdp = steps[:, None] * step_rdp[None, :]
    leak = leakage_curve(orders=orders, rdp=rdp, log_p0=-bits * LN2)[0]
    trad = traditional_curve(orders=orders, rdp=rdp, log_p0=-bits * LN2)[0]
    return {"steps": steps, "leakage_bits": np.minimum(leak / LN2, bits),
            "traditional_bits": np.minimum(trad / LN2, bits)}
