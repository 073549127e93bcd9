"""The one range of DP-SGD's noise multiplier σ the lab takes, and the config fields for the
training run a result is compared with: its σ (0: not known, or not a DP run), sampling rate q
and steps. A spec that takes them shows the accountant's guarantee for that run beside what it
measured. The bounds CLI, the Bound Explorer and every such config take σ in this range.
"""

from __future__ import annotations

from typing import Any

from core.specs import param

# Why 0.2 (measured on a 2-core CPU): below it the guarantee of a real training run is vacuous
# (δ = 1e-5: ε ≈ 250 at q = 0.01, T = 1,000; ε ≈ 35 for a single full-batch step). The privacy
# loss distribution (``core.bounds.pld``: mia's and the audit's TPR caps, the tight bound) once
# took 6.4 GB and 3 minutes at σ = 0.15 on its fixed grid; its grid now coarsens to stay within
# a few million atoms at any σ. The RDP grid alone would go lower (σ = 0.02: 0.17 GB; 0.01:
# 0.65 GB and 4-20 s; it grows as 1/σ²).
SIGMA_MIN = 0.2
SIGMA_MAX = 1000.0   # far past any DP-SGD run's (near σ = 1e308 the RDP arithmetic overflows)
SIGMA_OFF = 0.0      # a config's σ = 0: no DP run given (or plain training)


def sigma_param(default: float | tuple[float, ...] = SIGMA_OFF, *,
                label: str = "training run's σ",
                help: str = "the run's DP-SGD noise multiplier, to show its guarantee beside "
                            "the measurement; 0: unknown (or no DP)",
                unset: float | None = SIGMA_OFF, flags: tuple[str, ...] = ()) -> Any:
    """A config field for a DP-SGD run's σ, or a tuple of σ (each checked): ``unset`` (0: not
    given, or plain training; None: a σ is needed) or from ``SIGMA_MIN`` to ``SIGMA_MAX``,
    refused otherwise when the config is made (``core.specs.check_params``)."""
    return param(default, ge=SIGMA_MIN, le=SIGMA_MAX, unset=unset, label=label, help=help,
                 flags=flags)


def q_param() -> float:
    return param(0.01, gt=0.0, le=1.0, label="training run's q",
                 help="the run's sampling rate (used with σ)")


def steps_param() -> int:
    return param(1000, ge=1, le=10**9, label="training run's steps",
                 help="the run's number of steps (used with σ)")


def leakage_bits(sigma: float, q: float, steps: int, bits: float) -> float | None:
    """The Bound Explorer's L(p0) for a secret of ``bits`` bits (p0 = 2^−bits) under DP-SGD with
    (σ, q, steps) (Stock et al. 2022, Eq. 3; ``core.bounds.summary``): the most any attack can
    learn of it. None when σ is 0 (no DP run given); 0 for a secret of no bits (p0 = 1)."""
    if not sigma:
        return None
    if bits <= 0:
        return 0.0
    from core.bounds.summary import summarize

    return summarize(sigma=sigma, q=q, steps=steps, bits=bits, delta=1e-5).leakage_bits
