"""The inverse problem: smallest σ meeting a leakage or ε target."""

import math

import pytest

from core.bounds.inverse import sigma_for_epsilon, sigma_for_leakage
from core.bounds.summary import summarize
from core.errors import UserError

PAPER = dict(q=2.81e-4, steps=186_000)


def test_smallest_sigma_for_leakage_is_tight():
    sol = sigma_for_leakage(**PAPER, bits=40, target_bits=10)
    assert sol.achieved <= 10
    assert summarize(sigma=sol.sigma, bits=40, delta=3e-7, **PAPER).leakage_bits <= 10
    assert summarize(sigma=sol.sigma * 0.995, bits=40, delta=3e-7, **PAPER).leakage_bits > 10


def test_smallest_sigma_for_epsilon_is_tight():
    sol = sigma_for_epsilon(**PAPER, delta=3e-7, target_epsilon=8.0)
    assert sol.achieved <= 8.0
    assert summarize(sigma=sol.sigma * 0.995, bits=40, delta=3e-7, **PAPER).epsilon > 8.0


@pytest.mark.parametrize("target", [40.0, 0.0, -1.0, math.nan])
def test_leakage_target_outside_0_b_is_rejected(target):
    with pytest.raises(UserError, match="between 0"):
        sigma_for_leakage(**PAPER, bits=40, target_bits=target)


def test_unreachable_target_says_so():
    with pytest.raises(UserError, match="no noise multiplier"):
        sigma_for_leakage(q=1.0, steps=10**6, bits=1000, target_bits=0.01)
