"""The tightest reconstruction bound DP-SGD allows: the whole privacy profile, via a PLD.

For every ε, the hockey-stick divergence δ(ε) = H_{e^ε}(M(D ∪ {s}) ‖ M(D)) bounds any event,
so the posterior of a secret obeys  p1 ≤ inf_ε e^ε p0 + δ(ε)  (Dwork & Roth 2014, Def. 2.4
applied to the event "the attack outputs s"); this is the largest true-positive rate at
false-positive rate p0 of a test between the two (Hayes et al. 2023). Only the REMOVE
direction is used: P = (1−q)N(0, σ²) + qN(1, σ²), the model trained with the secret, against
Q = N(0, σ²), the model trained without it; the privacy loss L = log(dP/dQ).

The discretisation is connect-the-dots (Doroshenko et al. 2022): the P-mass of the losses in
each interval ((k−1)Δ, kΔ] is split between its two ends so that its P-mass and its Q-mass
are both kept. That is dp-accounting's pessimistic PLD (a dominating pair), here computed in
log space from Gaussian tail functions, so masses of 1e-300 keep full relative precision.

Composition of T steps is by FFT, under exponential tilting: the PMF p of one step is
reweighted to p_λ ∝ p·e^{λL}, composed, and mapped back by p^{*T}(s) = p_λ^{*T}(s)·M(λ)^T·e^{−λs}
(the Esscher transform; M(λ) = E_P[e^{λL}] is the RDP moment at order λ + 1). The FFT's
round-off is absolute, ~1e-16 of the tilted peak, so each tilt is precise where its tilted
distribution has its mass: λ = 0 in the bulk, λ = −1 (Q itself) where Q has its mass, and
larger λ far in the upper tail, where a b-bit secret's bound is decided. Each tilt is composed
once, on a window outside which its composed mass is below e^-60 by a Chernoff bound, which a
coarse copy of the one-step PMF (blocks of atoms past the bulk) gives in milliseconds; the
same copy chooses the tilts. Tilts whose windows outgrow 2^21 atoms are left out, unless that
leaves the bound for a secret of up to 128 bits imprecise: then they are composed on windows
of up to 2^23. Each loss keeps the estimate of the tilt with the smallest error
bound there, and the bounds are carried along
(``log_error``): δ(ε) is overstated by them, never understated, and ``precision_limited``
says where they make up half the bound or more.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import fft, special

from core.bounds.rdp import validate_mechanism
from core.bounds.reconstruction import LN2, log_inverse_prior

PLD_DISCRETIZATION = 1e-4  # loss grid step Δ; connect-the-dots needs no finer at 186k steps
DEFAULT_MAX_BITS = 256.0  # the profile is precise for secrets up to this many bits
_TAIL = 60.0  # tilted mass left outside a composition window: below e^-60 of the whole
_TILT_SPACING = 8.0  # neighbouring tilts' means lie this many standard deviations apart
_ROUND_OFF = 1e-15  # FFT round-off per bin, relative to the tilted distribution's peak
_MAX_BINS = 1 << 21  # a tilt whose window needs more is not composed: precision ends there
_WIDE_BINS = 1 << 23  # ... unless that leaves the bound imprecise for _CHECKED_BITS or fewer
# atoms the tilts' windows may span together (839 nats): 64 MiB per array of the profile, about
# 1 GB at the peak. DP-SGD at σ ≥ 0.2 spans 3-6.2 million (q from 2.81e-4 to 1, T up to 186,000).
# Wider, the losses under Q and P lie hundreds of nats apart: the guarantee is vacuous (σ = 0.3,
# q = 0.001, T = 10^6: 12 million atoms, 1.5 GB, every TPR cap 1; σ = 0.2 asked for 16 GB+)
_MAX_SPAN = 1 << 23
_CHECKED_BITS = 128.0  # the secret lengths the Bound Explorer draws
_BLOCK = 64  # atoms per block of the coarse PMF that chooses tilts and windows,
_EXACT_HEAD = 4096  # after its first this many atoms, kept one by one
_WORKERS = 2  # threads of each FFT


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


# All mass at +∞: δ(ε) ≤ 1 for every ε, valid for any run, and what a run too wide to hold gets
VACUOUS = PrivacyProfile(losses=np.array([1.0]), log_probs=np.array([-np.inf]),
                         log_error=np.array([-np.inf]), log_infinity_mass=0.0)


@dataclass(frozen=True)
class ProfileCurve:
    """Tight leakage log(p1/p0) ≤ ``nats`` per prior, the ε attaining it, and reliability."""

    nats: np.ndarray
    bits: np.ndarray
    epsilon: np.ndarray
    precision_limited: np.ndarray  # the error bounds make up half the bound or more


def _log_gauss_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log(Φ(hi) − Φ(lo)) for lo < hi, from the tail on the side of the interval (no cancellation)."""
    upper = lo > 0  # both in the upper tail: Φ̄(lo) − Φ̄(hi)
    near, far = np.where(upper, -lo, hi), np.where(upper, -hi, lo)
    log_near, log_far = special.log_ndtr(near), special.log_ndtr(far)
    with np.errstate(divide="ignore"):
        one_side = log_near + np.log(-np.expm1(log_far - log_near))
        straddle = np.log1p(-(np.exp(special.log_ndtr(-hi)) + np.exp(special.log_ndtr(lo))))
    return np.where(upper | (hi <= 0), one_side, straddle)


def _one_step(q: float, sigma: float, step: float, log_tail: float) -> tuple[int, np.ndarray, float]:
    """Connect-the-dots PMF of one step: (index of the first atom, log P-masses, log P-mass at
    +∞), the losses beyond the atoms' range (P-mass below e^log_tail) put at +∞."""
    z_top = -special.ndtri(math.exp(max(log_tail, -745.0)))  # Φ̄(z_top) = e^log_tail
    if log_tail < -745.0:  # beyond doubles: the asymptotic inverse of log Φ̄
        z_top = math.sqrt(-2.0 * log_tail - math.log(-4.0 * math.pi * log_tail))
    loss = lambda x: np.logaddexp(math.log1p(-q) if q < 1 else -np.inf,  # noqa: E731
                                  math.log(q) + (2.0 * x - 1.0) / (2.0 * sigma**2))
    top = int(math.ceil(loss(1.0 + sigma * z_top) / step))
    bottom = int(math.floor(loss(-sigma * z_top) / step)) if q == 1.0 else int(math.floor(math.log1p(-q) / step))
    edges_loss = np.arange(bottom, top + 1) * step
    with np.errstate(divide="ignore", invalid="ignore"):  # x(L) = σ² log((e^L − 1 + q)/q) + 1/2,
        # e^L − 1 + q as e^L (1 − (1 − q) e^−L): exact where e^L is far below 1 (q = 1, small σ)
        log_gap = edges_loss + np.log1p(-(1.0 - q) * np.exp(-edges_loss))
        x = sigma**2 * (log_gap - math.log(q)) + 0.5
    x[0] = -np.inf  # the first bin takes every lower loss (rounded up: pessimistic)
    lo, hi = x[:-1], x[1:]
    log_q_bin = _log_gauss_mass(lo / sigma, hi / sigma)
    log_p_bin = _log_gauss_mass((lo - 1.0) / sigma, (hi - 1.0) / sigma) + math.log(q)
    if q < 1.0:
        log_p_bin = np.logaddexp(log_p_bin, log_q_bin + math.log1p(-q))
    # share w of the bin to its upper end: w e^{-L_k} + (1 − w) e^{-L_{k−1}} = Q/P
    r = np.clip(log_q_bin - log_p_bin + edges_loss[:-1], -step, 0.0)
    with np.errstate(divide="ignore"):
        log_up = log_p_bin + np.log(-np.expm1(r)) - math.log(-math.expm1(-step))
        log_down = log_p_bin - step + np.log(np.expm1(r + step)) - math.log(-math.expm1(-step))
    log_probs = np.logaddexp(np.append(log_down, -np.inf), np.insert(log_up, 0, -np.inf))
    x_top = hi[-1]
    log_inf = np.logaddexp(math.log(q) + special.log_ndtr(-(x_top - 1.0) / sigma),
                           (math.log1p(-q) if q < 1 else -np.inf) + special.log_ndtr(-x_top / sigma))
    return bottom, log_probs, float(log_inf)


def _tilted(log_probs: np.ndarray, losses: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """The one-step PMF tilted by e^{λL}, normalised, and log M(λ) = log Σ p e^{λL}."""
    log_tilted = log_probs + lam * losses
    log_m = float(special.logsumexp(log_tilted))
    return np.exp(log_tilted - log_m), log_m


@dataclass(frozen=True)
class _Coarse:
    """The one-step PMF, past its first ``_EXACT_HEAD`` atoms summed over blocks of ``_BLOCK``
    atoms: log masses and each block's lowest loss, centroid and highest loss. Enough for choosing tilts and for Chernoff
    bounds on windows (a block's mass put at its highest loss bounds an upper tail from above,
    at its lowest a lower tail), at 1/_BLOCK of the cost."""

    log_probs: np.ndarray
    low: np.ndarray
    mid: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, first: int, log_probs: np.ndarray, step: float) -> _Coarse:
        head = min(_EXACT_HEAD, log_probs.size)  # the bulk's atoms, where most mass sits, as they are
        head_losses = (first + np.arange(head)) * step
        blocks = -(-(log_probs.size - head) // _BLOCK)
        padded = np.full(blocks * _BLOCK, -np.inf)
        padded[: log_probs.size - head] = log_probs[head:]
        padded = padded.reshape(blocks, _BLOCK)
        log_mass = special.logsumexp(padded, axis=1) if blocks else np.zeros(0)
        low = (first + head + np.arange(blocks) * _BLOCK) * step
        high = np.minimum(low + (_BLOCK - 1) * step, (first + log_probs.size - 1) * step)
        with np.errstate(invalid="ignore"):  # the block's centroid: the mean stays exact
            offset = np.exp(padded - log_mass[:, None]) @ np.arange(_BLOCK)
        mid = np.where(np.isfinite(log_mass), low + offset * step, low)
        join = lambda blocked: np.concatenate([head_losses, blocked])  # noqa: E731
        return cls(np.concatenate([log_probs[:head], log_mass]), join(low), join(mid), join(high))

    def moments(self, steps: int, lam: float) -> tuple[float, float]:
        """Mean and standard deviation of the T-fold sum of losses under the tilt λ."""
        tilted, _ = _tilted(self.log_probs, self.mid, lam)
        mean = float(tilted @ self.mid)
        return steps * mean, math.sqrt(steps * float(tilted @ (self.mid - mean) ** 2))

    def window(self, steps: int, lam: float, step: float) -> tuple[int, int]:
        """(first atom index, size) of a composed support outside which the T-fold sum under
        the tilt λ has mass ≤ e^-_TAIL on each side (Chernoff: P[S ≥ a] ≤ e^{T K(θ) − θa},
        K the tilted one-step cumulant function, over a grid of θ around the Gaussian optimum)."""
        mean, spread = self.moments(steps, lam)
        thetas = math.sqrt(2.0 * _TAIL) / max(spread, 1e-300) * np.geomspace(1 / 16, 16, 33)
        log_m = float(special.logsumexp(self.log_probs + lam * self.mid))
        top = min((steps * (float(special.logsumexp(self.log_probs + (lam + t) * self.high)) - log_m)
                   + _TAIL) / t for t in thetas)
        bottom = max(-(steps * (float(special.logsumexp(self.log_probs + (lam - t) * self.low)) - log_m)
                       + _TAIL) / t for t in thetas)
        return int(math.floor(bottom / step)), int(math.ceil((top - bottom) / step)) + 2


def _capped(window: tuple[int, int]) -> tuple[int, int]:
    """The middle ``_MAX_BINS`` of a window too large (the ends' masses then say what was lost)."""
    start, size = window
    return (start + (size - _MAX_BINS) // 2, _MAX_BINS) if size > _MAX_BINS else window


def _span(windows) -> int:
    """The atoms from the first window's start to the last one's end: what ``_assemble`` holds."""
    return max(w[0] + w[1] for w in windows) - min(w[0] for w in windows)


def _compose(first: int, log_probs: np.ndarray, steps: int, step: float, lam: float,
             window: tuple[int, int]):
    """T-fold composition of the PMF tilted by λ on ``window`` (first atom index, size), mapped
    back: (first atom index, log masses, log error bounds). The mass outside the window, which
    the cyclic FFT folds back into it, is below e^-_TAIL: far below the round-off, which is
    the error bound (or the window's end values, if larger: a window cut by ``_capped``)."""
    losses = (first + np.arange(log_probs.size)) * step
    tilted, log_m = _tilted(log_probs, losses, lam)
    start, size = window
    length = fft.next_fast_len(size, real=True)
    folded = np.bincount(np.arange(tilted.size) % length, weights=tilted, minlength=length)
    spectrum = fft.rfft(folded, workers=_WORKERS)
    cyclic = fft.irfft(spectrum**steps, length, workers=_WORKERS)  # at (s − T·first) mod length
    composed = np.roll(cyclic, -((start - steps * first) % length))[:size]
    noise = max(_ROUND_OFF * composed.max(), -composed.min(), composed[0], composed[-1])
    shift = steps * log_m - lam * (start + np.arange(size)) * step
    with np.errstate(divide="ignore"):
        return start, np.log(np.maximum(composed, 0.0)) + shift, math.log(noise) + shift


def _tilts(coarse: _Coarse, steps: int, step: float, max_log_inv: float,
           max_bins: int = _MAX_BINS) -> list[float]:
    """Tilts whose composed means step from Q's mean (λ = −1) upwards, _TILT_SPACING standard
    deviations apart, until they pass the largest log(1/p0) asked for, or a tilt's window
    would outgrow ``max_bins``; λ = 0 (P) among them. Each λ solves T·E_λ[L] = target by
    Newton's method (the mean is increasing in λ, its derivative the variance)."""
    lams, lam = [-1.0, 0.0], -1.0
    mean, spread = coarse.moments(steps, lam)
    while mean <= max_log_inv:
        target, before = mean + _TILT_SPACING * spread, lam
        for _ in range(30):
            lam += float(np.clip((target - mean) / max(spread**2, 1e-300), -1.0, 1.0 + abs(lam)))
            mean, spread = coarse.moments(steps, lam)
            if abs(mean - target) < 2.0 * spread:
                break
        if (22.0 * spread / step > max_bins or target > steps * coarse.high[-1]
                or not lam > before):   # Newton swung between λ and λ + 1 (a heavy tail): no
            break                       # higher tilt; the losses above are precision-limited
        lams.append(lam)
    return sorted(set(lams))


def privacy_profile(*, q: float, noise_multiplier: float, steps: int,
                    discretization: float = PLD_DISCRETIZATION,
                    max_bits: float = DEFAULT_MAX_BITS) -> PrivacyProfile:
    """The REMOVE-direction PLD of T-fold DP-SGD, precise for priors down to 2^-max_bits;
    ``VACUOUS`` where its windows would span more than ``_MAX_SPAN`` atoms."""
    validate_mechanism(q=q, noise_multiplier=noise_multiplier, steps=steps)
    steps, step, max_log_inv = int(steps), discretization, max_bits * LN2
    first, log_probs, log_inf_one = _one_step(q, noise_multiplier, step,
                                              -(max_log_inv + math.log(steps) + 40.0))
    coarse = _Coarse.of(first, log_probs, step)
    windows = {lam: _capped(coarse.window(steps, lam, step))
               for lam in _tilts(coarse, steps, step, max_log_inv)}
    if _span(windows.values()) > _MAX_SPAN:
        return VACUOUS
    parts = [_compose(first, log_probs, steps, step, lam, w) for lam, w in windows.items()]
    profile = _assemble(parts, coarse, log_inf_one, steps, step)
    checked = min(max_bits, _CHECKED_BITS)
    if _reach(profile) < checked * LN2 and tight_leakage_curve(  # the check itself takes ~0.3 s
            profile, log_p0=-np.linspace(1.0, checked, 64) * LN2).precision_limited.any():
        wider = {lam: coarse.window(steps, lam, step) for lam in
                 _tilts(coarse, steps, step, max_log_inv, _WIDE_BINS) if lam not in windows}
        wider = {lam: w for lam, w in wider.items() if 1 <= w[1] <= _WIDE_BINS}
        if _span([*windows.values(), *wider.values()]) <= _MAX_SPAN:  # else: precision-limited
            parts += [_compose(first, log_probs, steps, step, lam, w) for lam, w in wider.items()]
            profile = _assemble(parts, coarse, log_inf_one, steps, step)
    return profile


def _reach(profile: PrivacyProfile) -> float:
    """The largest loss up to which some tilt's window covers the profile (above it, the mass is
    a Chernoff bound counted at +∞: a bound for a secret of more nats is precision-limited)."""
    gap = np.flatnonzero(np.isneginf(profile.log_error))
    return float(profile.losses[gap[0]] if gap.size else profile.losses[-1])


def _assemble(parts: list, coarse: _Coarse, log_inf_one: float, steps: int,
              step: float) -> PrivacyProfile:
    """One profile from the tilts' compositions: each loss from the tilt with the smallest error
    bound there; the mass beyond them and in gaps between them (Chernoff) counted at +∞."""
    start = min(p[0] for p in parts)
    size = max(p[0] + p[1].size for p in parts) - start
    best_probs, best_error = np.full(size, -np.inf), np.full(size, np.inf)
    for part_start, part_probs, part_error in parts:
        at = slice(part_start - start, part_start - start + part_probs.size)
        better = part_error < best_error[at]
        best_probs[at] = np.where(better, part_probs, best_probs[at])
        best_error[at] = np.where(better, part_error, best_error[at])
    log_inf = (log_inf_one + math.log(steps) if log_inf_one < -30
               else math.log(-math.expm1(steps * math.log1p(-math.exp(log_inf_one)))))
    top = (start + size - 1) * step
    log_inf = np.logaddexp(log_inf, _log_mass_above(coarse, steps, step, top))
    gap = np.flatnonzero(np.isinf(best_error))
    if gap.size:  # losses no tilt's window reached: their mass (Chernoff) is counted at +∞
        gap_start = (start + gap[0] - 1) * step
        log_inf = np.logaddexp(log_inf, _log_mass_above(coarse, steps, step, gap_start))
        best_error[gap] = -np.inf
    return PrivacyProfile(losses=(start + np.arange(size)) * step, log_probs=best_probs,
                          log_error=best_error, log_infinity_mass=log_inf)


def _log_mass_above(coarse: _Coarse, steps: int, step: float, top: float) -> float:
    """Chernoff: log P[Σ L > top] ≤ min_θ>0 T·log E[e^{θL}] − θ·top, the mass past the last
    atom composed (counted at +∞, so that no bound leaves it out); E[e^{θL}] from the coarse
    PMF with each block's mass at its highest loss, which only raises it."""
    if top >= steps * coarse.high[-1] - step / 2:  # the window reaches the largest composed loss
        return -np.inf
    thetas = np.geomspace(0.05, 5e4, 24)
    return min(steps * float(special.logsumexp(coarse.log_probs + t * coarse.high)) - t * top
               for t in thetas)


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
