"""The privacy loss distribution of T steps of DP-SGD, composed by tilted FFTs.

The REMOVE pair: P = (1−q)N(0, σ²) + qN(1, σ²), the model trained with the record, against
Q = N(0, σ²), without it; the privacy loss L = log(dP/dQ). ``compose`` returns the T-fold
composed PMF of L (atoms on a grid of step Δ), an error bound per atom and the mass at +∞.

The discretisation is connect-the-dots (Doroshenko et al. 2022): the P-mass of the losses in
each interval ((k−1)Δ, kΔ] is split between its two ends so that its P-mass and its Q-mass
are both kept. That is dp-accounting's pessimistic PLD (a dominating pair) for any Δ, here
computed in log space from Gaussian tail functions, so masses of 1e-300 keep full relative
precision.

Composition of T steps is by FFT, under exponential tilting: the PMF p of one step is
reweighted to p_λ ∝ p·e^{λL}, composed, and mapped back by p^{*T}(s) = p_λ^{*T}(s)·M(λ)^T·e^{−λs}
(the Esscher transform; M(λ) = E_P[e^{λL}] is the RDP moment at order λ + 1). The FFT's
round-off is absolute, ~1e-16 of the tilted peak, so each tilt is precise where its tilted
distribution has its mass: λ = 0 in the bulk, λ = −1 (Q itself) where Q has its mass, and
larger λ far in the upper tail, where a b-bit secret's bound is decided. Each tilt is composed
once, on a window outside which its composed mass is below e^-60 by a Chernoff bound.

The grid (``choose_grid``): a one-step PMF of 65,536 atoms, summed past its bulk into blocks,
chooses the tilts (their composed means 8 sd apart, from Q's up past the largest log(1/p0) asked
for) in milliseconds; Δ is then the finest (at least ``finest``, 1e-4) at which every tilt's
mean ± 11 sd fits 2^20 atoms and all of them 2^21. So every composition is one FFT of at most
2^20 atoms, and the profile a few million at most, whatever σ, q and T. Wide profiles get a
coarser Δ: still a dominating pair, a little more pessimistic (docs/bounds.md measures what it
costs).

Each loss keeps the estimate of the tilt with the smallest error bound there, and the bounds are
carried along (``log_error``): δ(ε) is overstated by them, never understated. Where an
estimate's error exceeds what the Esscher identity itself allows at that loss (the tilted mass
is at most 1, so p^{*T}(s) ≤ M(λ)^T e^{−λs} for every λ), that cap replaces it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import fft, special

_TAIL = 60.0  # tilted mass left outside a composition window: below e^-60 of the whole
_HALF_WIDTH = math.sqrt(2.0 * _TAIL)  # a Gaussian's e^-60 tails lie this many sd from its mean
_TILT_SPACING = 8.0  # neighbouring tilts' means lie this many standard deviations apart
_ROUND_OFF = 1e-15  # FFT round-off per bin, relative to the tilted distribution's peak
_WINDOW_ATOMS = 1 << 20  # a tilt's mean ± 11 sd fits this many atoms: Δ grows to make it so
_SPAN_ATOMS = 1 << 21  # ... and the tilts' windows together twice as many (16 MiB an array)
_MAX_RISE_NATS = 839.0  # tilts stop this far above Q's composed mean (a bound on their number)
_PROBE_ATOMS = 1 << 16  # atoms of the one-step PMF that chooses the tilts and the grid
_BLOCK = 64  # atoms per block of the coarse PMF that chooses tilts and windows,
_EXACT_HEAD = 4096  # after its first this many atoms, kept one by one
_WORKERS = 2  # threads of each FFT


class ComposedPld(NamedTuple):
    """Atoms ``losses`` (step Δ), their log P-masses and log error bounds, and the log P-mass
    at +∞."""

    losses: np.ndarray
    log_probs: np.ndarray
    log_error: np.ndarray
    log_infinity_mass: float


def _log_gauss_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log(Φ(hi) − Φ(lo)) for lo < hi, from the tail on the side of the interval (no cancellation)."""
    upper = lo > 0  # both in the upper tail: Φ̄(lo) − Φ̄(hi)
    near, far = np.where(upper, -lo, hi), np.where(upper, -hi, lo)
    log_near, log_far = special.log_ndtr(near), special.log_ndtr(far)
    with np.errstate(divide="ignore", invalid="ignore"):  # the straddling ones: below
        masses = log_near + np.log(-np.expm1(log_far - log_near))
    straddle = ~upper & (hi > 0)  # around 0: 1 − Φ̄(hi) − Φ(lo)
    masses[straddle] = np.log1p(-(np.exp(special.log_ndtr(-hi[straddle]))
                                  + np.exp(special.log_ndtr(lo[straddle]))))
    return masses


def _loss_range(q: float, sigma: float, log_tail: float) -> tuple[float, float]:
    """The lowest and highest one-step loss (nats) the PMF keeps as atoms: the P-mass of the
    losses above is below e^log_tail; under P none lie below log(1 − q) (q = 1: its tail too)."""
    z_top = -special.ndtri(math.exp(max(log_tail, -745.0)))  # Φ̄(z_top) = e^log_tail
    if log_tail < -745.0:  # beyond doubles: the asymptotic inverse of log Φ̄
        z_top = math.sqrt(-2.0 * log_tail - math.log(-4.0 * math.pi * log_tail))
    loss = lambda x: float(np.logaddexp(math.log1p(-q) if q < 1 else -np.inf,  # noqa: E731
                                        math.log(q) + (2.0 * x - 1.0) / (2.0 * sigma**2)))
    return (loss(-sigma * z_top) if q == 1.0 else math.log1p(-q)), loss(1.0 + sigma * z_top)


def _one_step(q: float, sigma: float, step: float, log_tail: float) -> tuple[int, np.ndarray, float]:
    """Connect-the-dots PMF of one step: (index of the first atom, log P-masses, log P-mass at
    +∞), the losses beyond the atoms' range (P-mass below e^log_tail) put at +∞."""
    low, high = _loss_range(q, sigma, log_tail)
    bottom, top = int(math.floor(low / step)), int(math.ceil(high / step))
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


def _log_sum_exp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ e^v along ``axis`` (−∞ for an empty or all −∞ row), without scipy's checks."""
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(top, axis) + np.log(np.sum(np.exp(values - top), axis=axis))


def _tilted(log_probs: np.ndarray, losses: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """The one-step PMF tilted by e^{λL}, normalised, and log M(λ) = log Σ p e^{λL}."""
    log_tilted = log_probs + lam * losses
    log_m = float(_log_sum_exp(log_tilted))
    return np.exp(log_tilted - log_m), log_m


@dataclass(frozen=True)
class _Coarse:
    """The one-step PMF, past its first ``_EXACT_HEAD`` atoms summed over blocks of ``_BLOCK``
    atoms: log masses and each block's lowest loss, centroid and highest loss. Enough for
    choosing tilts and for Chernoff bounds on windows (a block's mass put at its highest loss
    bounds an upper tail from above, at its lowest a lower tail), at 1/_BLOCK of the cost."""

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
        log_mass = _log_sum_exp(padded, axis=1) if blocks else np.zeros(0)
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

    def log_mass_from_mean(self, steps: int, lam: float) -> float:
        """log P[S ≥ E_λ S] ≤ T·log M(λ) − λ·E_λ S for λ > 0 (Chernoff at θ = λ): how much of
        P lies at and above the tilt's composed mean."""
        tilted, log_m = _tilted(self.log_probs, self.mid, lam)
        return steps * (log_m - lam * float(tilted @ self.mid))

    def window(self, steps: int, lam: float, step: float) -> tuple[int, int]:
        """(first atom index, size) of a composed support outside which the T-fold sum under
        the tilt λ has mass ≤ e^-_TAIL on each side (Chernoff: P[S ≥ a] ≤ e^{T K(θ) − θa},
        K the tilted one-step cumulant function, over a grid of θ around the Gaussian optimum,
        and one from 1e-3 to 1e3 for a heavy tail, whose optimum lies far from it)."""
        mean, spread = self.moments(steps, lam)
        thetas = np.concatenate([_HALF_WIDTH / max(spread, 1e-300) * np.geomspace(1 / 16, 16, 33),
                                 np.geomspace(1e-3, 1e3, 25)])
        log_m = float(_log_sum_exp(self.log_probs + lam * self.mid))
        t = thetas[:, None]
        top = np.nanmin((steps * (_log_sum_exp(self.log_probs + (lam + t) * self.high) - log_m)
                         + _TAIL) / thetas)
        bottom = np.nanmax(-(steps * (_log_sum_exp(self.log_probs + (lam - t) * self.low) - log_m)
                             + _TAIL) / thetas)
        return int(math.floor(bottom / step)), int(math.ceil((top - bottom) / step)) + 2


class _Part(NamedTuple):
    """One tilt's composition mapped back: its first atom index, log masses and log error
    bounds, the tilt λ and T·log M(λ)."""

    start: int
    log_probs: np.ndarray
    log_error: np.ndarray
    lam: float
    log_moment: float


def _capped(window: tuple[int, int], centre: int) -> tuple[int, int]:
    """At most ``_WINDOW_ATOMS`` of a window, about the tilt's mean ``centre`` (a heavy tail's
    Chernoff window can reach millions of nats; its composed mass sits near the mean, and the
    error bound of the cut window's ends says what was lost)."""
    start, size = window
    if size <= _WINDOW_ATOMS:
        return window
    return min(max(start, centre - _WINDOW_ATOMS // 2), start + size - _WINDOW_ATOMS), _WINDOW_ATOMS


def _compose(first: int, log_probs: np.ndarray, steps: int, step: float, lam: float,
             window: tuple[int, int]) -> _Part:
    """T-fold composition of the PMF tilted by λ on ``window`` (first atom index, size), mapped
    back (``_Part``: log masses and log error bounds from the window's start). The mass outside
    the window, which
    the cyclic FFT folds back into it, is below e^-_TAIL: far below the round-off, which is the
    error bound (or the window's end values, if larger: a window cut by ``_capped``)."""
    losses = (first + np.arange(log_probs.size)) * step
    tilted, log_m = _tilted(log_probs, losses, lam)
    start, size = window
    length = fft.next_fast_len(size, real=True)
    if tilted.size <= length:
        folded = np.zeros(length)
        folded[: tilted.size] = tilted
    else:
        folded = np.bincount(np.arange(tilted.size) % length, weights=tilted, minlength=length)
    spectrum = fft.rfft(folded, workers=_WORKERS)
    with np.errstate(divide="ignore"):  # numpy's z**n is exp(n·log z) for n ≥ 100: written
        power = spectrum**steps if steps < 100 else np.exp(steps * np.log(spectrum))  # out, faster
    cyclic = fft.irfft(power, length, workers=_WORKERS)  # at (s − T·first) mod length
    composed = np.roll(cyclic, -((start - steps * first) % length))[:size]
    noise = max(_ROUND_OFF * composed.max(), -composed.min(), composed[0], composed[-1])
    shift = steps * log_m - lam * (start + np.arange(size)) * step
    with np.errstate(divide="ignore"):
        return _Part(start, np.log(np.maximum(composed, 0.0)) + shift, math.log(noise) + shift,
                     lam, steps * log_m)


def _tilt_for_mean(coarse: _Coarse, steps: int, lam: float, target: float) -> float:
    """The λ at which T·E_λ[L] = target, to two standard deviations, from below (λ itself):
    Newton's method (the mean increases with λ, its derivative the variance), bisecting
    whenever a step leaves the bracket it has found (a heavy tail's mean leaps with λ)."""
    low, high = lam, math.inf
    for _ in range(60):
        mean, spread = coarse.moments(steps, lam)
        if abs(mean - target) < 2.0 * spread:
            break
        low, high = (lam, high) if mean < target else (low, lam)
        newton = lam + (target - mean) / max(spread**2, 1e-300)
        lam = (newton if low < newton < high else
               (low + high) / 2.0 if math.isfinite(high) else low + 1.0 + abs(low))
    return lam


def _tilts(coarse: _Coarse, steps: int, max_log_inv: float) -> list[float]:
    """Tilts whose composed means step from Q's mean (λ = −1) upwards, _TILT_SPACING standard
    deviations apart, until one passes the largest log(1/p0) asked for, or has less than
    e^-(log(1/p0) + _TAIL) of P above its mean, or they rise ``_MAX_RISE_NATS`` above Q's mean
    (the losses above are then precision-limited); λ = 0 (P) among them."""
    lams, lam = [-1.0, 0.0], -1.0
    mean, spread = coarse.moments(steps, lam)
    lowest = mean
    while mean <= max_log_inv and mean - lowest <= _MAX_RISE_NATS:
        target = mean + _TILT_SPACING * spread
        if target > steps * coarse.high[-1]:
            break
        lam = _tilt_for_mean(coarse, steps, lam, target)
        lams.append(lam)
        mean, spread = coarse.moments(steps, lam)
        if lam > 0.0 and coarse.log_mass_from_mean(steps, lam) < -(max_log_inv + _TAIL):
            break
    return sorted(set(lams))


def _log_tail(max_log_inv: float, steps: int) -> float:
    """The one-step P-mass put at +∞ (its log): e^-40 of the smallest prior, over T steps."""
    return -(max_log_inv + math.log(steps) + 40.0)


def choose_grid(*, q: float, sigma: float, steps: int, max_log_inv: float,
                finest: float) -> tuple[float, list[float]] | None:
    """The loss grid step Δ and the tilts, from a one-step PMF of ``_PROBE_ATOMS`` atoms: Δ the
    finest (at least ``finest``) at which every tilt's mean ± 11 sd, and one step's losses, fit
    ``_WINDOW_ATOMS`` and all the tilts' together ``_SPAN_ATOMS`` (the top tilt, which only
    covers the losses below its mean, gets a window of ``_WINDOW_ATOMS`` at most, cut about its
    mean); None where P's mean − 11 sd lies above ``max_log_inv`` (every TPR cap at FPR ≥
    e^-max_log_inv is 1 to within e^-60)."""
    log_tail = _log_tail(max_log_inv, steps)
    low, high = _loss_range(q, sigma, log_tail)
    probe = max(finest, (high - low) / _PROBE_ATOMS)
    first, log_probs, _ = _one_step(q, sigma, probe, log_tail)
    coarse = _Coarse.of(first, log_probs, probe)
    p_mean, p_spread = coarse.moments(steps, 0.0)
    if p_mean - _HALF_WIDTH * p_spread > max_log_inv:
        return None
    lams = _tilts(coarse, steps, max_log_inv)
    sized = [lam for lam in lams  # the last tilt, with no P of note above its mean, is cut
             if lam <= 0.0 or coarse.log_mass_from_mean(steps, lam) >= -(max_log_inv + _TAIL)]
    means, spreads = np.array([coarse.moments(steps, lam) for lam in sized]).T
    span = float(np.max(means + _HALF_WIDTH * spreads) - np.min(means - _HALF_WIDTH * spreads))
    widest = max(2.0 * _HALF_WIDTH * spreads.max(), high - low)  # a window, or one step's losses
    return max(finest, widest / _WINDOW_ATOMS, span / _SPAN_ATOMS), lams


def _assemble(parts: list[_Part], coarse: _Coarse, log_inf_one: float, steps: int,
              step: float) -> ComposedPld:
    """One profile from the tilts' compositions: each loss from the tilt with the smallest error
    bound there, unless a tilt's cap is lower (``_cap_by_tilts``); the mass beyond them and in
    gaps between them (Chernoff) counted at +∞."""
    start = min(p.start for p in parts)
    size = max(p.start + p.log_probs.size for p in parts) - start
    best_probs, best_error = np.full(size, -np.inf), np.full(size, np.inf)
    for part in parts:
        at = slice(part.start - start, part.start - start + part.log_probs.size)
        better = part.log_error < best_error[at]
        best_probs[at] = np.where(better, part.log_probs, best_probs[at])
        best_error[at] = np.where(better, part.log_error, best_error[at])
    losses = (start + np.arange(size)) * step
    log_inf = (log_inf_one + math.log(steps) if log_inf_one < -30
               else math.log(-math.expm1(steps * math.log1p(-math.exp(log_inf_one)))))
    log_inf = np.logaddexp(log_inf, _log_mass_above(coarse, steps, step, losses[-1]))
    gap = np.flatnonzero(np.isinf(best_error))
    if gap.size:  # losses no tilt's window reached: their mass (Chernoff) is counted at +∞
        gap_start = (start + gap[0] - 1) * step
        log_inf = np.logaddexp(log_inf, _log_mass_above(coarse, steps, step, gap_start))
        best_error[gap] = -np.inf
    _cap_by_tilts(parts, losses, best_probs, best_error)
    return ComposedPld(losses, best_probs, best_error, float(log_inf))


def _cap_by_tilts(parts: list[_Part], losses: np.ndarray, log_probs: np.ndarray,
                  log_error: np.ndarray) -> None:
    """Where an estimate's upper end p + err exceeds min_λ M(λ)^T e^{−λs}, it becomes 0 with
    that cap as its error. The cap holds for every atom: p^{*T}(s) = p_λ^{*T}(s)·M(λ)^T e^{−λs}
    (the Esscher transform) and the tilted mass p_λ^{*T}(s) is at most 1. A tilt's mapped-back
    round-off grows as e^{−λs}; far from its mean (Q's tilt high in P's tail) a cap is smaller."""
    cap = np.full(losses.size, np.inf)
    for part in parts:
        np.minimum(cap, part.log_moment - part.lam * losses, out=cap)
    above = cap < np.logaddexp(log_probs, log_error)
    log_probs[above], log_error[above] = -np.inf, cap[above]


def _log_mass_above(coarse: _Coarse, steps: int, step: float, top: float) -> float:
    """Chernoff: log P[Σ L > top] ≤ min_θ>0 T·log E[e^{θL}] − θ·top, the mass past the last
    atom composed (counted at +∞, so that no bound leaves it out); E[e^{θL}] from the coarse
    PMF with each block's mass at its highest loss, which only raises it."""
    if top >= steps * coarse.high[-1] - step / 2:  # the window reaches the largest composed loss
        return -np.inf
    thetas = np.geomspace(0.05, 5e4, 24)
    return float(np.nanmin(steps * _log_sum_exp(coarse.log_probs + thetas[:, None] * coarse.high)
                           - thetas * top))


def compose(*, q: float, sigma: float, steps: int, max_log_inv: float,
            finest: float) -> ComposedPld | None:
    """The T-fold composed REMOVE-direction PLD, precise for log(1/p0) up to ``max_log_inv``,
    on a grid of step at least ``finest``; None where P's composed losses lie above every
    log(1/p0) asked for save e^-60 of its mass (every bound is then vacuous)."""
    grid = choose_grid(q=q, sigma=sigma, steps=steps, max_log_inv=max_log_inv, finest=finest)
    if grid is None:
        return None
    step, lams = grid
    first, log_probs, log_inf_one = _one_step(q, sigma, step, _log_tail(max_log_inv, steps))
    coarse = _Coarse.of(first, log_probs, step)
    parts = []
    for lam in lams:
        centre = int(round(coarse.moments(steps, lam)[0] / step))
        window = _capped(coarse.window(steps, lam, step), centre)
        parts.append(_compose(first, log_probs, steps, step, lam, window))
    return _assemble(parts, coarse, log_inf_one, steps, step)
