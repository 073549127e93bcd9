"""The tight privacy-profile bound p1 ≤ inf_ε e^ε p0 + δ(ε) (PLD accountant)."""

import math

import numpy as np
import pytest

from core.bounds import DEFAULT_ORDERS, compute_rdp, leakage_curve
from core.bounds.profile import delta_for_epsilon, privacy_profile, tight_leakage_curve

LN2 = math.log(2)
BITS = np.array([1, 2, 5, 10, 16, 24, 40, 128, 1000], dtype=float)


@pytest.fixture(scope="module")
def profile():
    return privacy_profile(q=0.01, noise_multiplier=1.0, steps=1000, discretization=1e-3)


def test_tight_bound_is_the_infimum_over_epsilon(profile):
    curve = tight_leakage_curve(profile, log_p0=-BITS * LN2)
    atoms = profile.losses  # the infimum over every real ε sits at an atom
    fine = np.linspace(profile.losses[0], profile.losses[-1] + 1, 4001)
    for b, nats in zip(BITS, curve.nats):
        at_atoms, on_grid = (np.min(np.logaddexp(e - b * LN2, np.log(delta_for_epsilon(profile, e))))
                             + b * LN2 for e in (atoms, fine))
        assert nats == pytest.approx(min(at_atoms, b * LN2), rel=1e-9, abs=1e-12)
        assert nats <= on_grid + 1e-12


def test_tight_bound_beats_rdp_where_precise_and_is_never_negative_or_nan(profile):
    curve = tight_leakage_curve(profile, log_p0=-BITS * LN2)
    assert np.all(np.isfinite(curve.nats)) and np.all(curve.nats >= 0)
    assert np.all(curve.nats <= BITS * LN2 + 1e-12)
    rdp = compute_rdp(q=0.01, noise_multiplier=1.0, steps=1000, orders=DEFAULT_ORDERS)
    rdp_leak = leakage_curve(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=-BITS * LN2)[0]
    precise = ~curve.precision_limited
    assert precise[:4].all() and np.all(curve.nats[precise] <= rdp_leak[precise] + 1e-9)
    assert not curve.precision_limited[:-1].any()  # tilted composition: precise to 128 bits
    assert curve.precision_limited[-1]  # 2^-1000 lies past the largest prior asked for (256 bits)


def test_delta_is_non_increasing_and_at_least_the_floor(profile):
    delta = delta_for_epsilon(profile, np.linspace(0, 20, 500))
    assert np.all(np.diff(delta) <= 1e-15) and np.all(delta >= math.exp(profile.log_infinity_mass))


def test_wide_windows_keep_the_bound_precise_where_the_upper_tilts_spread_far():
    """σ = 1 at the paper's q and T: the tilts that reach 128-bit secrets need windows of 3–8
    million atoms. With them the bound is precise to 128 bits and below the RDP bound."""
    q, sigma, steps = 2.81e-4, 1.0, 186_000
    bits = np.array([16, 32, 64, 128], dtype=float)
    curve = tight_leakage_curve(privacy_profile(q=q, noise_multiplier=sigma, steps=steps),
                                log_p0=-bits * LN2)
    rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=DEFAULT_ORDERS)
    rdp_bits = leakage_curve(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=-bits * LN2)[0] / LN2
    assert not curve.precision_limited.any()
    assert np.all(curve.bits < rdp_bits) and np.all(np.diff(curve.bits) > 0)
