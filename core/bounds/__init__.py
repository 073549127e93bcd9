"""Theory: RDP of DP-SGD and what it guarantees against reconstruction (Stock et al. 2022).

Pure numpy, keyword-only, vectorised over the RDP order α. ``log_p0`` is always the natural
log of the prior, so priors such as 2^-1000 are representable.
"""

from core.bounds.rdp import DEFAULT_ORDERS, compute_rdp
from core.bounds.reconstruction import (
    Bound,
    capped_leakage_nats,
    epsilon_balle,
    epsilon_standard,
    leakage_curve,
    posterior_log_bound,
    reconstruction_leakage,
    traditional_curve,
    traditional_leakage,
)

__all__ = [
    "DEFAULT_ORDERS",
    "Bound",
    "capped_leakage_nats",
    "compute_rdp",
    "epsilon_balle",
    "epsilon_standard",
    "leakage_curve",
    "posterior_log_bound",
    "reconstruction_leakage",
    "traditional_curve",
    "traditional_leakage",
]
