"""Attack-risk readouts: the TPR cap at an FPR, the advantage, against riskcal and closed forms."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from core.bounds.profile import (VACUOUS, PrivacyProfile, log_tpr_cap, privacy_profile,
                                 tight_leakage_curve)
from core.bounds.risk import advantage_cap, reconstruction_cap, tpr_cap, tradeoff_tpr
from core.errors import UserError

FPR = np.array([1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.99])
SETTING = dict(sigma=1.0, q=0.01, steps=100)


@pytest.fixture(scope="module")
def dp_accounting_pld():
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=SETTING["sigma"], sampling_prob=SETTING["q"],
        value_discretization_interval=1e-4).self_compose(SETTING["steps"])


def as_profile(pmf) -> PrivacyProfile:
    """dp-accounting's composed PMF as our profile (no error bounds)."""
    pmf = pmf.to_dense_pmf()
    probs = np.maximum(pmf._probs, 0.0)
    with np.errstate(divide="ignore"):
        return PrivacyProfile(losses=(pmf._lower_loss + np.arange(probs.size)) * pmf._discretization,
                              log_probs=np.log(probs), log_error=np.full(probs.size, -np.inf),
                              log_infinity_mass=math.log(pmf._infinity_mass))


def test_tradeoff_matches_riskcal_on_one_pair(dp_accounting_pld):
    """riskcal's Algorithm 1 and symmetrisation, fed the REMOVE pair and its swap (the ADD
    pair of the same discretisation), give our curve to 1e-6."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
    from riskcal.analysis import get_beta_from_pld

    profile = as_profile(dp_accounting_pld._pmf_remove)
    q_masses = np.exp(profile.log_probs - profile.losses)
    lower = -int(round(profile.losses[-1] / 1e-4))
    swapped = pld_pmf.DensePLDPmf(1e-4, lower, q_masses[::-1], 1.0 - q_masses.sum(), True)
    remove = pld_pmf.DensePLDPmf(1e-4, int(round(profile.losses[0] / 1e-4)), profile.probs,
                                 math.exp(profile.log_infinity_mass), True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        beta = get_beta_from_pld(PrivacyLossDistribution(remove, swapped), alpha=FPR)
    np.testing.assert_allclose(tradeoff_tpr(profile, FPR), 1.0 - beta, atol=1e-6)


def test_our_profile_is_dp_accountings_and_the_advantage_is_riskcals(dp_accounting_pld):
    from riskcal.analysis import get_advantage_from_pld

    ours = privacy_profile(q=SETTING["q"], noise_multiplier=SETTING["sigma"], steps=SETTING["steps"])
    theirs = as_profile(dp_accounting_pld._pmf_remove)
    log_fpr = np.log(FPR)
    np.testing.assert_allclose(np.exp(log_tpr_cap(ours, log_fpr)[0]),
                               np.exp(log_tpr_cap(theirs, log_fpr)[0]), atol=1e-6)
    assert advantage_cap(**SETTING) == pytest.approx(get_advantage_from_pld(dp_accounting_pld), abs=1e-6)


@pytest.mark.parametrize("sigma, steps", [(2.0, 10), (0.5, 1), (0.25, 1)])
def test_full_batch_is_the_gaussian_trade_off(sigma, steps):
    """q = 1: T steps of the Gaussian are μ-GDP, μ = √T/σ: TPR = 1 − Φ(Φ⁻¹(1 − α) − μ). At
    σ ≤ 0.5 the lowest losses lie below −37 nats, where e^L − 1 + q once rounded to 0 (NaN)."""
    mu = math.sqrt(steps) / sigma
    exact = 1.0 - stats.norm.cdf(stats.norm.ppf(1.0 - FPR) - mu)
    tpr = tpr_cap(sigma, 1.0, steps, FPR)
    assert np.all(tpr >= exact - 1e-9)  # pessimistic discretisation: never below
    np.testing.assert_allclose(tpr, exact, atol=1e-4)
    assert advantage_cap(sigma, 1.0, steps) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, abs=1e-4)


def test_monotone_above_the_diagonal_and_vanishing_with_noise():
    fpr = np.linspace(0.0, 1.0, 201)
    tpr = tpr_cap(0.8, 0.05, 300, fpr)
    assert np.all(np.diff(tpr) >= -1e-12) and np.all(tpr >= fpr - 1e-12) and tpr[-1] == pytest.approx(1.0)
    quiet = tpr_cap(200.0, 0.01, 10, fpr)  # σ → ∞: no better than guessing, up to the grid Δ = 1e-4
    np.testing.assert_allclose(quiet, fpr, atol=2e-4)
    assert advantage_cap(200.0, 0.01, 10) < 2e-4 < advantage_cap(2.0, 0.01, 10)


def test_reconstruction_cap_is_the_tight_bound_and_bad_fpr_is_refused():
    cap = reconstruction_cap(1.0, 0.01, 100, bits=8)
    assert 2.0**-8 < cap < 1.0
    with pytest.raises(UserError, match=r"\[0, 1\]"):
        tpr_cap(1.0, 0.01, 100, [0.5, 1.5])


def test_the_lowest_sigma_gives_caps_of_at_most_1():
    """σ = 0.2 (the lab's lower limit), q = 0.01, T = 1,000: the profile's error bounds once
    carried the advantage to 1.08; no cap exceeds 1."""
    assert advantage_cap(0.2, 0.01, 1000) <= 1.0
    assert np.all(tpr_cap(0.2, 0.01, 1000, FPR) <= 1.0)


def test_a_run_too_wide_to_hold_gets_the_vacuous_profile_at_once():
    """σ = 0.2, q = 0.001, T = 10^6 (ε = 6,355 at δ = 1e-5): P's composed losses lie thousands
    of nats up, past every prior down to 2^-256 save e^-60 of their mass; its distribution once
    asked for 16 GB and more. Every cap is 1."""
    assert privacy_profile(q=1e-3, noise_multiplier=0.2, steps=10**6) is VACUOUS
    assert np.all(tpr_cap(0.2, 1e-3, 10**6, FPR) == 1.0) and advantage_cap(0.2, 1e-3, 10**6) == 1.0


def test_a_heavy_tailed_one_step_profile_returns_precise_and_never_below_the_best_test():
    """σ = 0.2, q = 1e-4, T = 1 (issue #44's hang): Newton's method for the next tilt swung
    between λ = 0 and 1 forever. The search now brackets its root, and Q's tilt, whose round-off
    grows as e^s high in P's tail, is capped there by the other tilts' Esscher bound: the
    profile is precise, and one step's best test (reject above t = σΦ̄⁻¹(α)) is its floor."""
    sigma, q = 0.2, 1e-4
    profile = privacy_profile(q=q, noise_multiplier=sigma, steps=1)
    bits = np.array([1.0, 20.0, 40.0])
    curve = tight_leakage_curve(profile, log_p0=-bits * math.log(2))
    alpha = 2.0**-bits
    best = (1 - q) * alpha + q * stats.norm.sf(stats.norm.isf(alpha) - 1 / sigma)
    assert not curve.precision_limited.any()
    assert np.all(curve.bits >= np.log2(best / alpha) - 1e-9)
    np.testing.assert_allclose(curve.bits, np.log2(best / alpha), atol=1e-3)
    assert np.all(tpr_cap(sigma, q, 1, FPR) <= 1.0) and 0 <= advantage_cap(sigma, q, 1) <= 1.0
