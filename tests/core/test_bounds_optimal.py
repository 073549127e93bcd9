"""Bounds to the digit: every bound is the minimum over all orders α > 1, not over a grid.

Reference: the same objective on a dense grid of 3,001 fractional orders spanning ±35% of
α − 1 around the optimum (the fractional-order RDP itself is checked against 50-digit
quadrature in test_bounds_rdp_precision.py, which also checks the optimum with mpmath).
"""

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.bounds import DEFAULT_ORDERS, compute_rdp, leakage_curve, traditional_curve
from core.bounds.curves import leakage_vs_bits, leakage_vs_steps
from core.bounds.optimal import Mechanism, optimal_epsilon, optimal_leakage, optimal_traditional
from core.bounds.reconstruction import balle_objective, leakage_objective, traditional_objective

LN2 = math.log(2)
BITS_TOLERANCE = 1e-4


def dense_minimum(objective, mechanism: Mechanism, parameter: float, alpha: float) -> float:
    """min of objective over 3,001 orders with log(α' − 1) within ±0.3 of log(α − 1)."""
    orders = 1.0 + (alpha - 1.0) * np.exp(np.linspace(-0.3, 0.3, 3001))
    orders = orders[orders != np.round(orders)]
    return float(np.min(objective(orders, mechanism.rdp(orders), parameter)))


def grid_bits(curve, mechanism: Mechanism, bits: float) -> float:
    rdp = mechanism.rdp(DEFAULT_ORDERS)
    return float(curve(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=-bits * LN2)[0]) / LN2


@pytest.mark.parametrize(("mechanism", "bits", "which", "grid_excess"), [
    (Mechanism(2.81e-4, 0.35, 186_000), 100, "leakage", 0.1),  # the issue's first setting
    (Mechanism(0.004, 1.2, 20_000), 100, "traditional", 0.02),  # and its second
])
def test_the_issues_settings_reach_the_true_minimum(mechanism, bits, which, grid_excess):
    optimum, objective, curve = {
        "leakage": (optimal_leakage, leakage_objective, leakage_curve),
        "traditional": (optimal_traditional, traditional_objective, traditional_curve),
    }[which]
    bound = optimum(mechanism, log_p0=-bits * LN2)
    reference = dense_minimum(objective, mechanism, bits * LN2, bound.alpha) / LN2
    assert bound.bits == pytest.approx(reference, abs=BITS_TOLERANCE)
    assert grid_bits(curve, mechanism, bits) - bound.bits > grid_excess  # what the grid missed
    assert not bound.at_edge


@settings(max_examples=12, deadline=None)
@given(q=st.floats(1e-5, 1.0), sigma=st.floats(0.3, 10.0), steps=st.integers(1, 1_000_000),
       bits=st.floats(1.0, 2000.0), delta=st.floats(1e-12, 1e-2))
def test_every_bound_matches_a_dense_order_grid(q, sigma, steps, bits, delta):
    mechanism = Mechanism(q, sigma, steps)
    log_inv = bits * LN2
    cases = [(optimal_leakage(mechanism, log_p0=-log_inv), leakage_objective, log_inv),
             (optimal_traditional(mechanism, log_p0=-log_inv), traditional_objective, log_inv)]
    for bound, objective, parameter in cases:
        if bound.alpha == 1.0:  # L's infimum as α → 1: the whole secret
            assert bound.nats == log_inv
            continue
        reference = dense_minimum(objective, mechanism, parameter, bound.alpha)
        assert abs(bound.nats - reference) / LN2 < BITS_TOLERANCE
    for conversion, objective in (("balle", balle_objective), ("standard", traditional_objective)):
        eps, alpha = optimal_epsilon(mechanism, delta=delta, conversion=conversion)
        parameter = math.log(delta) if conversion == "balle" else -math.log(delta)
        reference = max(dense_minimum(objective, mechanism, parameter, alpha), 0.0)
        assert eps == pytest.approx(reference, rel=1e-6, abs=1e-9)


def test_never_above_the_grid_and_full_leak_is_the_alpha_to_1_limit():
    mechanism = Mechanism(0.5, 0.3, 10_000)  # leaks everything: the infimum is at α → 1
    bound = optimal_leakage(mechanism, log_p0=-1000 * LN2)
    assert bound.bits == pytest.approx(1000.0) and bound.alpha == 1.0
    paper = Mechanism(2.81e-4, 0.6, 186_000)
    for bits in (1, 8, 40, 256, 5000):
        assert optimal_leakage(paper, log_p0=-bits * LN2).bits <= grid_bits(leakage_curve, paper, bits)
        assert optimal_traditional(paper, log_p0=-bits * LN2).bits <= grid_bits(traditional_curve, paper, bits)


def test_an_optimum_past_the_grid_is_flagged():
    bound = optimal_leakage(Mechanism(1e-4, 1000.0, 1), log_p0=-100 * LN2)
    assert bound.at_edge and bound.alpha > DEFAULT_ORDERS[-1]


def test_refined_curves_are_the_single_numbers_and_the_grid_curves_are_unchanged():
    q, sigma, steps = 2.81e-4, 0.35, 186_000
    step_rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=DEFAULT_ORDERS)
    refine = functools.partial(compute_rdp, q=q, noise_multiplier=sigma, steps=1)
    bits = np.array([1.0, 16.0, 40.0, 100.0, 128.0])
    grid = leakage_vs_bits(orders=DEFAULT_ORDERS, step_rdp=step_rdp, steps=steps, bits=bits)
    fine = leakage_vs_bits(orders=DEFAULT_ORDERS, step_rdp=step_rdp, steps=steps, bits=bits,
                           step_rdp_at=refine)
    mechanism = Mechanism(q, sigma, steps)
    for i, b in enumerate(bits):
        assert fine["leakage_bits"][i] == pytest.approx(
            min(optimal_leakage(mechanism, log_p0=-b * LN2).bits, b), abs=1e-9)
        assert fine["traditional_bits"][i] == pytest.approx(
            min(optimal_traditional(mechanism, log_p0=-b * LN2).bits, b), abs=1e-9)
        assert grid["leakage_bits"][i] == pytest.approx(min(grid_bits(leakage_curve, mechanism, b), b))
    assert grid["leakage_bits"][3] - fine["leakage_bits"][3] > 0.1
    step_counts = np.array([1_000.0, 186_000.0])
    by_steps = leakage_vs_steps(orders=DEFAULT_ORDERS, step_rdp=step_rdp, steps=step_counts, bits=100,
                                step_rdp_at=refine)
    assert by_steps["leakage_bits"][1] == pytest.approx(fine["leakage_bits"][3], abs=1e-9)
