"""Bounds to the digit: the optimal RDP order refined between grid points, RDP evaluated there.

Every bound of ``core.bounds.reconstruction`` is a minimum over α > 1 of an objective of d_α,
and on a fixed grid of orders the minimum can fall between grid points (σ = 0.35, q = 2.81e-4,
T = 186,000, b = 100: the grid's L is 0.12 bits high, the optimum is α ≈ 1.66).

Why a bracket suffices: (α−1)·d_α is the log-moment-generating function of the privacy loss,
convex in α, so with B = log(1/p0) the sublevel sets {α : (α−1)d_α + B ≤ c·α} of
l = ((α−1)d_α + B)/α, and likewise of h = ((α−1)d_α + B)/(α−1), are intervals. Both are
quasi-convex: their minimiser lies between the neighbours of the grid's best order. There, in
t = log(α − 1), successive parabolic interpolation with golden-section steps as a safeguard
(Brent 1973, "Algorithms for Minimization without Derivatives", Ch. 5) narrows the bracket,
for many rows (the points of a curve) at once, with one ``compute_rdp`` call per iteration.
Balle et al.'s ε objective is not proven quasi-convex; the search only ever keeps an
improvement on the grid, and the tests check it against a dense grid of orders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from core.bounds.rdp import DEFAULT_ORDERS, compute_rdp
from core.bounds.reconstruction import (
    LN2,
    Bound,
    balle_objective,
    check_delta,
    leakage_objective,
    log_inverse_prior,
    traditional_objective,
)

LOWEST_ORDER = 1.0 + 1e-6  # below the grid the search goes down to this order
BEYOND_GRID = 2.0  # and above it up to this factor past the grid's largest order
TOLERANCE = 1e-5  # bracket width in log(α − 1) where a search stops: the value is then exact to ~1e-8
MAX_ITERATIONS = 100
GOLDEN = (3.0 - math.sqrt(5.0)) / 2.0

# values_at(rows, alphas): the objective of each of ``rows`` at its own order ``alphas[i]``.
RowObjective = Callable[[np.ndarray, np.ndarray], np.ndarray]


def refine_minimum(values_at: RowObjective, orders: np.ndarray,
                   grid_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``grid_values`` (rows × orders): min over α > 1, its order, and whether it
    lies at the end of the search range above the grid (a larger order could do better)."""
    grid_values = np.where(np.isnan(grid_values), np.inf, grid_values)
    rows = np.arange(grid_values.shape[0])
    best = np.argmin(grid_values, axis=1)
    top = math.log(orders[-1] * BEYOND_GRID - 1.0)
    t_ends = np.concatenate([[math.log(LOWEST_ORDER - 1.0)], np.log(orders - 1.0), [top]])
    padded = np.pad(grid_values, ((0, 0), (1, 1)), constant_values=np.nan)
    a, b, c = t_ends[best], t_ends[best + 1], t_ends[best + 2]
    fa, fb, fc = padded[rows, best], padded[rows, best + 1], padded[rows, best + 2]
    for t, f in ((a, fa), (c, fc)):
        ends = np.isnan(f)
        if ends.any():
            f[ends] = _finite(values_at(rows[ends], 1.0 + np.exp(t[ends])))
    b, fb = _bracketed_search(values_at, rows, [a, b, c], [fa, fb, fc])
    return fb, 1.0 + np.exp(b), b >= top - 2 * TOLERANCE


def _finite(values: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), np.inf, values)


def _bracketed_search(values_at: RowObjective, rows: np.ndarray, points: list, values: list):
    """Shrink each bracket a < b < c with f(b) ≤ f(a), f(c) until c − a ≤ 2·TOLERANCE, or until
    the parabola's vertex has fallen within TOLERANCE of b twice in a row (b has converged)."""
    (a, b, c), (fa, fb, fc) = [p.astype(float) for p in points], [v.astype(float) for v in values]
    widths = np.full((2, rows.size), np.inf)  # the bracket's width one and two iterations ago
    settled = np.zeros(rows.size, dtype=int)  # consecutive parabolic steps shorter than TOLERANCE
    for _ in range(MAX_ITERATIONS):
        active = np.flatnonzero((c - a > 2 * TOLERANCE) & (settled < 2))
        if active.size == 0:
            break
        sa, sb, sc = a[active], b[active], c[active]
        golden = (sc - sa) > 0.5 * widths[1, active]  # not halved in two steps: golden section
        widths[:, active] = sc - sa, widths[0, active]
        x, short = _next_point(sa, sb, sc, fa[active], fb[active], fc[active], golden)
        settled[active] = np.where(short, settled[active] + 1, 0)
        fx = _finite(values_at(rows[active], 1.0 + np.exp(x)))
        better, right = fx < fb[active], x > sb
        # x becomes the middle point if better, else the end point on its side
        new_a = np.where(better, np.where(right, sb, sa), np.where(right, sa, x))
        new_c = np.where(better, np.where(right, sc, sb), np.where(right, x, sc))
        new_fa = np.where(better, np.where(right, fb[active], fa[active]), np.where(right, fa[active], fx))
        new_fc = np.where(better, np.where(right, fc[active], fb[active]), np.where(right, fx, fc[active]))
        a[active], c[active], fa[active], fc[active] = new_a, new_c, new_fa, new_fc
        b[active] = np.where(better, x, sb)
        fb[active] = np.where(better, fx, fb[active])
    return b, fb


def _next_point(a, b, c, fa, fb, fc, golden):
    """The vertex of the parabola through the three points, inside (a, c) and at least
    TOLERANCE/2 from b (and whether it fell closer than TOLERANCE); a golden-section point in
    the larger side where that fails."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (b - a) ** 2 * (fb - fc) - (b - c) ** 2 * (fb - fa)
        x = b - 0.5 * p / ((b - a) * (fb - fc) - (b - c) * (fb - fa))
    right_larger = (c - b) > (b - a)
    usable = np.isfinite(x) & (x > a) & (x < c) & ~golden
    short = usable & (np.abs(x - b) < TOLERANCE)
    x = np.where(np.abs(x - b) < 0.5 * TOLERANCE, b + np.where(right_larger, 0.5, -0.5) * TOLERANCE, x)
    golden_point = np.where(right_larger, b + GOLDEN * (c - b), b - GOLDEN * (b - a))
    return np.where(usable, x, golden_point), short


@dataclass(frozen=True)
class Mechanism:
    """DP-SGD as the RDP accountant sees it: T steps of the Poisson-subsampled Gaussian."""

    q: float
    noise_multiplier: float
    steps: float

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """T·d_α at each order (fractional orders included)."""
        return compute_rdp(q=self.q, noise_multiplier=self.noise_multiplier, steps=self.steps,
                           orders=orders)


def _optimum(objective, mechanism: Mechanism, parameter: float, orders: np.ndarray):
    """(minimum, order, at_edge) of objective(orders, rdp, parameter) over α > 1."""
    values_at = lambda rows, alphas: objective(alphas, mechanism.rdp(alphas), parameter)  # noqa: E731
    grid = objective(orders, mechanism.rdp(orders), parameter)[None, :]
    value, alpha, edge = refine_minimum(values_at, orders, grid)
    return float(value[0]), float(alpha[0]), bool(edge[0])


def _bound(objective, mechanism: Mechanism, log_p0: float, orders: np.ndarray) -> Bound:
    nats, alpha, edge = _optimum(objective, mechanism, float(log_inverse_prior(log_p0)), orders)
    return Bound(nats=nats, bits=nats / LN2, alpha=alpha, at_edge=edge)


def optimal_leakage(mechanism: Mechanism, *, log_p0: float, orders: np.ndarray = DEFAULT_ORDERS) -> Bound:
    """L(p0) = inf over α > 1 of d_α(α−1)/α + log(1/p0)/α (Stock et al. 2022, Eq. 3); as α → 1
    the objective tends to log(1/p0), which is therefore the largest value it can take."""
    bound = _bound(leakage_objective, mechanism, log_p0, orders)
    limit = float(log_inverse_prior(log_p0))
    return bound if bound.nats <= limit else Bound(limit, limit / LN2, 1.0, at_edge=False)


def optimal_traditional(mechanism: Mechanism, *, log_p0: float,
                        orders: np.ndarray = DEFAULT_ORDERS) -> Bound:
    """min over α > 1 of h(α, p0) = d_α + log(1/p0)/(α−1) (Mironov et al. 2019)."""
    return _bound(traditional_objective, mechanism, log_p0, orders)


def optimal_epsilon(mechanism: Mechanism, *, delta: float, conversion: str = "balle",
                    orders: np.ndarray = DEFAULT_ORDERS) -> tuple[float, float]:
    """(ε, optimal α) at δ over α > 1, clamped at 0: ``conversion`` "balle" (Balle et al. 2020,
    Thm. 21; Opacus' ``get_privacy_spent``) or "standard" (Mironov 2017, Prop. 3)."""
    log_delta = math.log(check_delta(delta))
    if conversion == "standard":
        bound = _bound(traditional_objective, mechanism, log_delta, orders)
        return max(bound.nats, 0.0), bound.alpha
    eps, alpha, _ = _optimum(balle_objective, mechanism, log_delta, orders)
    return max(eps, 0.0), alpha
