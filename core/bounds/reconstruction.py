"""Bounds on reconstruction leakage and ε from an RDP curve (Stock et al. 2022, Sections 2-3).

A secret s has prior p0 = P[A(M(D)) = s] and posterior p1 = P[A(M(D ∪ {s})) = s]. If the
training mechanism is (α, d_α)-RDP, probability preservation gives (Stock et al., Eq. 2)

    log(p1/p0) ≤ l(α, p0) = d_α (α−1)/α + log(1/p0)/α,        L(p0) = min_α l(α, p0)  (Eq. 3)

while the traditional bound (Mironov et al. 2019) is h(α, p0) = d_α + log(1/p0)/(α−1) ≥ l.
With p0 = δ, min_α h is the standard RDP→(ε, δ) conversion. All logs are natural; ``log_p0``
is log p0 so that p0 = 2^-1000 is representable. Every function here minimises over the order
grid it is given and says when the optimum sits at the grid's edge (a wider grid could do better);
``core.bounds.optimal`` refines the order between grid points, to the true minimum over α > 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.errors import UserError

LN2 = math.log(2.0)


@dataclass(frozen=True)
class Bound:
    """A leakage bound log(p1/p0) ≤ ``nats`` (= ``bits`` · ln 2), attained at order ``alpha``."""

    nats: float
    bits: float
    alpha: float
    at_edge: bool  # the optimal order is the first or last of the grid


def _check(orders, rdp) -> tuple[np.ndarray, np.ndarray]:
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    if orders.ndim != 1 or orders.size == 0 or rdp.ndim == 0 or rdp.shape[-1] != orders.size:
        raise UserError("orders must be a non-empty 1-D array and rdp's last axis must match it")
    if not np.all(orders > 1.0):
        raise UserError("RDP orders must all be above 1")
    return orders, rdp


def log_inverse_prior(log_p0) -> np.ndarray:
    """log(1/p0) as an array, checking 0 < p0 ≤ 1."""
    log_p0 = np.asarray(log_p0, dtype=float)
    if not np.all(np.isfinite(log_p0)) or np.any(log_p0 > 0):
        raise UserError("the prior p0 must be in (0, 1]: log_p0 must be a finite number ≤ 0")
    return -log_p0


def _minimise(values: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum over the last axis (orders), its order and whether it is at the grid's edge."""
    values = np.where(np.isnan(values), np.inf, values)
    best = np.argmin(values, axis=-1)
    return (np.take_along_axis(values, best[..., None], axis=-1)[..., 0], orders[best],
            (best == 0) | (best == orders.size - 1))


def leakage_objective(orders, rdp, log_inv):
    """l(α, p0) = d_α (α−1)/α + log(1/p0)/α at every order (last axis), log(1/p0) broadcast."""
    return rdp * (orders - 1.0) / orders + log_inv / orders


def traditional_objective(orders, rdp, log_inv):
    """h(α, p0) = d_α + log(1/p0)/(α−1) at every order (last axis), log(1/p0) broadcast."""
    return rdp + log_inv / (orders - 1.0)


def balle_objective(orders, rdp, log_delta):
    """d_α − (log δ + log α)/(α−1) + log((α−1)/α): Balle et al. (2020, Thm. 21)'s ε at order α."""
    return rdp - (log_delta + np.log(orders)) / (orders - 1.0) + np.log((orders - 1.0) / orders)


def leakage_curve(*, orders, rdp, log_p0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """L(p0) in nats, its optimal order and edge flag; broadcasts log p0 against rdp[..., 0]."""
    orders, rdp = _check(orders, rdp)
    return _minimise(leakage_objective(orders, rdp, log_inverse_prior(log_p0)[..., None]), orders)


def traditional_curve(*, orders, rdp, log_p0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """min_α h(α, p0) in nats, its optimal order and edge flag, for an array of log p0."""
    orders, rdp = _check(orders, rdp)
    return _minimise(traditional_objective(orders, rdp, log_inverse_prior(log_p0)[..., None]), orders)


def _bound(curve, **kwargs) -> Bound:
    nats, alpha, edge = curve(**kwargs)
    return Bound(nats=float(nats), bits=float(nats) / LN2, alpha=float(alpha), at_edge=bool(edge))


def reconstruction_leakage(*, orders, rdp, log_p0: float) -> Bound:
    """L(p0) = min_α d_α(α−1)/α + log(1/p0)/α (Stock et al., Eq. 3), in nats and bits."""
    return _bound(leakage_curve, orders=orders, rdp=rdp, log_p0=float(log_p0))


def traditional_leakage(*, orders, rdp, log_p0: float) -> Bound:
    """min_α h(α, p0) = d_α + log(1/p0)/(α−1) (Mironov et al. 2019), in nats and bits."""
    return _bound(traditional_curve, orders=orders, rdp=rdp, log_p0=float(log_p0))


def check_delta(delta: float) -> float:
    """δ as a float, checking 0 < δ < 1."""
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise UserError(f"delta must be in (0, 1), got {delta}")
    return delta


def epsilon_standard(*, orders, rdp, delta: float) -> tuple[float, float]:
    """ε = min_α d_α + log(1/δ)/(α−1) (Mironov 2017, Prop. 3), clamped at 0; with its order."""
    bound = traditional_leakage(orders=orders, rdp=rdp, log_p0=math.log(check_delta(delta)))
    return max(bound.nats, 0.0), bound.alpha


def epsilon_balle(*, orders, rdp, delta: float) -> tuple[float, float]:
    """ε = min_α d_α − (log δ + log α)/(α−1) + log((α−1)/α) (Balle et al. 2020, Thm. 21).

    The conversion of Opacus' ``get_privacy_spent``, clamped at 0; returns (ε, optimal α).
    """
    orders, rdp = _check(orders, rdp)
    eps, alpha, _ = _minimise(balle_objective(orders, rdp, math.log(check_delta(delta))), orders)
    return max(float(eps), 0.0), float(alpha)


def posterior_log_bound(*, leakage_nats, log_p0) -> np.ndarray:
    """log p1 ≤ min(log p0 + leakage, 0): the posterior can never exceed 1."""
    return np.minimum(np.asarray(log_p0, dtype=float) + leakage_nats, 0.0)


def capped_leakage_nats(*, leakage_nats, log_p0) -> np.ndarray:
    """Leakage capped at the secret's own length log(1/p0): p1 ≤ 1 leaks at most everything."""
    return np.minimum(leakage_nats, log_inverse_prior(log_p0))
