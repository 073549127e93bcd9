"""RDP of DP-SGD and ε against Opacus (golden values) and the paper's settings."""

import math
import warnings

import numpy as np
import pytest
from opacus.accountants.analysis import rdp as opacus_rdp

from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle, epsilon_standard
from core.bounds.curves import leakage_vs_steps
from core.errors import UserError

FINITE_IN_OPACUS = DEFAULT_ORDERS[DEFAULT_ORDERS < 1000]


@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_matches_opacus_to_1e_6(q, sigma):
    ours = compute_rdp(q=q, noise_multiplier=sigma, steps=7, orders=FINITE_IN_OPACUS)
    theirs = opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=7, orders=FINITE_IN_OPACUS)
    assert np.all(np.isfinite(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_matches_opacus_at_the_papers_sampling_rate():
    """q = 2.81e-4: integer orders and fractional ones from 3 on agree to 1e-6."""
    orders = FINITE_IN_OPACUS[FINITE_IN_OPACUS >= 3]
    ours = compute_rdp(q=2.81e-4, noise_multiplier=0.6, steps=186_000, orders=orders)
    theirs = opacus_rdp.compute_rdp(q=2.81e-4, noise_multiplier=0.6, steps=186_000, orders=orders)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_stays_finite_where_opacus_overflows():
    orders = np.array([1100.0, 2000.0, 4096.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = opacus_rdp.compute_rdp(q=0.01, noise_multiplier=1.0, steps=1, orders=orders)
    assert not np.any(np.isfinite(theirs))
    ours = compute_rdp(q=0.01, noise_multiplier=1.0, steps=1, orders=DEFAULT_ORDERS)
    assert DEFAULT_ORDERS.max() >= 1024 and np.all(np.isfinite(ours))
    assert np.all(np.diff(ours) >= -1e-12)  # d_α is non-decreasing in α
    assert ours[-1] <= DEFAULT_ORDERS[-1] / 2  # never above the un-subsampled Gaussian


def test_full_batch_is_the_gaussian_closed_form():
    rdp = compute_rdp(q=1.0, noise_multiplier=2.0, steps=10, orders=DEFAULT_ORDERS)
    np.testing.assert_allclose(rdp, DEFAULT_ORDERS / 8 * 10)


@pytest.mark.parametrize("sigma", [0.6, 1.0])
def test_epsilon_matches_opacus_get_privacy_spent(sigma):
    orders = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)), dtype=float)
    rdp = opacus_rdp.compute_rdp(q=2.81e-4, noise_multiplier=sigma, steps=186_000, orders=orders)
    eps, alpha = opacus_rdp.get_privacy_spent(orders=orders, rdp=rdp, delta=3e-7)
    assert epsilon_balle(orders=orders, rdp=rdp, delta=3e-7) == pytest.approx((eps, alpha), rel=1e-12)
    standard, _ = epsilon_standard(orders=orders, rdp=rdp, delta=3e-7)
    assert standard == pytest.approx(np.min(rdp + math.log(1 / 3e-7) / (orders - 1)))
    assert standard > eps


def test_epsilon_is_clamped_at_zero():
    rdp = compute_rdp(q=1e-4, noise_multiplier=50.0, steps=1, orders=DEFAULT_ORDERS)
    assert epsilon_balle(orders=DEFAULT_ORDERS, rdp=rdp, delta=0.5)[0] == 0.0


def test_papers_figure_2_min_h_turns_vacuous_while_l_stays_partial():
    """σ = 0.4, q = 2.81e-4, b = 40 (Stock et al., Fig. 2): by 186k steps min h ≥ b, L < b."""
    step_rdp = compute_rdp(q=2.81e-4, noise_multiplier=0.4, steps=1, orders=DEFAULT_ORDERS)
    data = leakage_vs_steps(orders=DEFAULT_ORDERS, step_rdp=step_rdp, steps=np.array([1e3, 186e3]), bits=40)
    assert data["traditional_bits"][1] == 40 and 20 < data["leakage_bits"][1] < 30
    assert data["leakage_bits"][0] < data["traditional_bits"][0] < 40


@pytest.mark.parametrize("kwargs", [dict(q=0.0), dict(q=1.5), dict(noise_multiplier=0.0),
                                    dict(noise_multiplier=math.nan), dict(steps=0)])
def test_bad_mechanism_raises_user_error(kwargs):
    args = dict(q=0.1, noise_multiplier=1.0, steps=1, orders=DEFAULT_ORDERS) | kwargs
    with pytest.raises(UserError):
        compute_rdp(**args)
