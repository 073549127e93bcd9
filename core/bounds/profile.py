"""The tightest reconstruction bound DP-SGD allows: the whole privacy profile, via a PLD.

For every ε, the hockey-stick divergence δ(ε) = H_{e^ε}(M(D ∪ {s}) ‖ M(D)) bounds any event,
so the posterior of a secret obeys  p1 ≤ inf_ε e^ε p0 + δ(ε)  (Dwork & Roth 2014, Def. 2.4
applied to the event "the attack outputs s"); this is the largest true-positive rate at
false-positive rate p0 of a test between the two (Hayes et al. 2023). Only the REMOVE
direction is used: P = (1−q)N(0, σ²) + qN(1, σ²), the model trained with the secret, against
Q = N(0, σ²), the model trained without it; the privacy loss L = log(dP/dQ).

The privacy loss distribution is composed in ``core.bounds.pld`` (connect-the-dots on a grid
of step Δ ≥ 1e-4, tilted FFTs of at most 2^20 atoms, an error bound per atom; Doroshenko et
al. 2022 for the grid, the Esscher transform for the tilts). The bounds here read it: δ(ε) and the TPR cap are overstated by the error bounds, never understated, and
``precision_limited`` says where they make up half the bound or more.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from core.bounds.pld import compose
from core.bounds.rdp import validate_mechanism
from core.bounds.reconstruction import LN2, log_inverse_prior

PLD_DISCRETIZATION = 1e-4  # the finest loss grid step Δ (connect-the-dots needs no finer)
DEFAULT_MAX_BITS = 256.0  # the profile is precise for secrets up to this many bits


@dataclass(frozen=True)
class PrivacyProfile:
    """The T-fold composed REMOVE-direction PLD: atoms ``losses`` (step Δ), their P-masses and
    an absolute error bound of each (both as logs), and the P-mass at +∞ (log)."""

    losses: np.ndarray
    log_probs: np.ndarray
    log_error: np.ndarray
    log_infinity_mass: float

    @property
    def probs(self) -> np.ndarray:
        return np.exp(self.log_probs)

    @functools.cached_property
    def log_tail_probs(self) -> np.ndarray:
        """log S_k = log Σ_{j≥k} p_j (the tails are computed once per profile: every bound reads them)."""
        return log_tail_sums(self.log_probs)

    @functools.cached_property
    def log_tail_discounted(self) -> np.ndarray:
        """log R_k = log Σ_{j≥k} p_j e^{−L_j}."""
        return log_tail_sums(self.log_probs - self.losses)

    @functools.cached_property
    def log_tail_error(self) -> np.ndarray:
        """log Σ_{j≥k} err_j."""
        return log_tail_sums(self.log_error)


# All mass at +∞: δ(ε) ≤ 1 for every ε, valid for any run, and what a run whose P lies past
# every prior asked for gets (its bounds are all vacuous)
VACUOUS = PrivacyProfile(losses=np.array([1.0]), log_probs=np.array([-np.inf]),
                         log_error=np.array([-np.inf]), log_infinity_mass=0.0)


@dataclass(frozen=True)
class ProfileCurve:
    """Tight leakage log(p1/p0) ≤ ``nats`` per prior, the ε attaining it, and reliability."""

    nats: np.ndarray
    bits: np.ndarray
    epsilon: np.ndarray
    precision_limited: np.ndarray  # the error bounds make up half the bound or more


def privacy_profile(*, q: float, noise_multiplier: float, steps: int,
                    discretization: float = PLD_DISCRETIZATION,
                    max_bits: float = DEFAULT_MAX_BITS) -> PrivacyProfile:
    """The REMOVE-direction PLD of T-fold DP-SGD, precise for priors down to 2^-max_bits, on a
    loss grid of step ``discretization`` or coarser where the composed losses spread wide
    (``core.bounds.pld``); ``VACUOUS`` where P's losses lie beyond every such prior."""
    validate_mechanism(q=q, noise_multiplier=noise_multiplier, steps=steps)
    composed = compose(q=q, sigma=noise_multiplier, steps=int(steps), max_log_inv=max_bits * LN2,
                       finest=discretization)
    return VACUOUS if composed is None else PrivacyProfile(*composed)


def log_tail_sums(log_values: np.ndarray) -> np.ndarray:
    """log Σ_{j ≥ k} e^{v_j} for every k, and a last entry −∞ (the empty sum)."""
    return np.append(np.logaddexp.accumulate(log_values[::-1])[::-1], -np.inf)


def delta_for_epsilon(profile: PrivacyProfile, epsilon) -> np.ndarray:
    """δ(ε) ≤ Σ_{L_j > ε} (p_j (1 − e^{ε − L_j}) + err_j) + P(L = ∞), for an array of ε."""
    epsilon = np.asarray(epsilon, dtype=float)
    above = np.searchsorted(profile.losses, epsilon, side="right")
    log_s, log_r = profile.log_tail_probs, profile.log_tail_discounted
    with np.errstate(invalid="ignore"):  # an empty tail: −∞ − (−∞)
        log_gap = log_s[above] + np.log(-np.expm1(np.minimum(epsilon + log_r[above] - log_s[above], 0.0)))
    log_gap = np.where(np.isneginf(log_s[above]), -np.inf, log_gap)
    slack = np.logaddexp(profile.log_tail_error[above], profile.log_infinity_mass)
    return np.exp(np.logaddexp(log_gap, slack))


def log_tpr_cap(profile: PrivacyProfile, log_fpr) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log of the largest TPR at FPR α of a test of P against Q, α = e^log_fpr (an array), with
    the threshold ε at which it is reached and the log of the error bounds included in it.

    TPR(α) = inf_ε e^ε α + δ(ε). Between atoms L_{k−1} < ε ≤ L_k, e^ε α + δ(ε) = e^ε (α − R_k) + S_k
    with S_k = Σ_{j≥k} p_j, R_k = Σ_{j≥k} p_j e^{−L_j}: monotone, so the infimum sits at the atom
    L_{k−1} after which R_k ≤ α, and S_k + e^{L_{k−1}} (α − R_k) is a sum of non-negative terms.
    """
    log_fpr = np.asarray(log_fpr, dtype=float)
    losses = profile.losses
    log_s, log_r = profile.log_tail_probs, profile.log_tail_discounted
    k = np.searchsorted(-log_r[:-1], -log_fpr, side="left")  # first k with R_k ≤ α
    threshold = np.where(k > 0, losses[np.maximum(k - 1, 0)], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_room = np.where(np.isneginf(log_fpr), -np.inf,
                            log_fpr + np.log(-np.expm1(np.minimum(log_r[k] - log_fpr, 0.0))))
        log_tight = np.logaddexp(log_s[k], np.where(k > 0, threshold + log_room, -np.inf))
    log_slack = np.logaddexp(profile.log_tail_error[k], profile.log_infinity_mass)
    return np.minimum(np.logaddexp(log_tight, log_slack), 0.0), threshold, log_slack


def tight_leakage_curve(profile: PrivacyProfile, *, log_p0) -> ProfileCurve:
    """inf_ε log(e^ε p0 + δ(ε)) − log p0 for an array of log p0 (the TPR cap at FPR p0, as
    leakage), capped at log(1/p0); precision-limited where the error bounds are half of it."""
    log_inv = log_inverse_prior(log_p0)
    log_bound, threshold, log_slack = log_tpr_cap(profile, -log_inv)
    nats = np.clip(log_bound + log_inv, 0.0, log_inv)
    return ProfileCurve(nats=nats, bits=nats / LN2, epsilon=np.maximum(threshold, 0.0),
                        precision_limited=log_slack + LN2 >= log_bound)
