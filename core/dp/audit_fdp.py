"""The f-DP one-run audit (Mahloujifar, Melis & Chaudhuri, "Auditing f-differential privacy in
one run", ICML 2025), with a Gaussian trade-off curve; guesses by the abstaining guesser's grid
or split-median thresholds.

Canaries are included by fair coins in one training run; the auditor guesses the coins of r of
the m canaries (v of them right) and abstains on the rest. The paper's game is reconstruction:
each guess names a canary's bit, either value (the authors' code, facebookresearch/PrivacyGuard
``FDPAnalysisNode``, k = 2 for membership), so guessing "non-member" counts as guessing
"member" does. If the training is f-DP, their Theorem bounds how likely v right guesses are;
their ``audit_rh`` recursion with cap decides it at level β. With r_0 = β·v/m,
h_0 = β·(r − v)/m, for i = v − 1, …, 0:

    h' = max(h, f̄(r_)),   r_' = min(r_ + i/(r − i)·(h' − h), 1),

where f̄(x) = Φ(Φ⁻¹(x) − μ) is the inverse of the Gaussian blow-up (μ-GDP's trade-off curve,
Dong, Roth & Su 2022); the recursion stops when h no longer moves, and f-DP is rejected when
r_ + h > r/m at its end. The hypothesis tested for an ε is μ-GDP with μ = 1/σ(ε, δ), the Gaussian
mechanism that is exactly (ε, δ)-DP (Balle & Wang 2018, ``dp_accounting.get_sigma_gaussian``):
the *Gaussian-DP ε*. ε̂ is the ε where rejection stops, as in google-deepmind/jax_privacy's
``auditing.py``; since μ(ε, δ) is increasing in ε, the root is sought in μ (bracketed by doubling,
Brent's method to ``MU_TOL``) and turned into ε once (``dp_accounting.get_epsilon_gaussian``):
the same ε̂ as a search in ε, without solving for σ(ε, δ) at every step (jax_privacy's golden
cases: 22 counts in 0.09 s instead of 0.53 s, 5 score sets in 0.51 s instead of 2.60 s).

The guesses come from one of two strategies, each valid at level β:

* ``bonferroni``, the guess grid (the default): the abstaining guesser of ``core.dp.audit_bounds`` (members
  for the k+ highest scores, non-members for the k− lowest, the best (k+, k−) of its grid with
  β divided over it), on every canary. For the same guesses the f-DP ε̂ was never below
  Steinke et al.'s (300 random (m, r, v, β, δ) checked), so it is at least the ``one_run`` bound;
* ``split``, the split median (jax_privacy's ``MultiSplit``, members guessed only; Meinshausen, Meier &
  Bühlmann 2009, Thm. 3.1): members and non-members are each split in two at random; the
  threshold τ maximises ε̂ on the first part, ε̂ is computed on the second part at τ, both at
  level β/2, and the median of ε̂ over ``SPLITS`` splits is the bound (twice the median p-value
  is a valid p-value). Holding out the first part is abstaining on it: still one run. On the
  n-gram Monte Carlo at σ = 4 and 8 it fell below ``one_run``: it audits half the canaries,
  one-sided (``docs/dp-audits.md``).

What the ε̂ means: it rejects "the training is μ-GDP with the μ of (ε̂, δ)", a Gaussian trade-off
curve. That is (ε, δ)-DP's ε for a Gaussian mechanism, and DP-SGD at q = 1 is one (the n-gram
Monte Carlo). For other mechanisms it is the ε of the Gaussian curve the run is proven not to
meet, not a bound on their (ε, δ): randomised response at ε = 2, all of 10,000 canaries guessed,
gives ε̂ = 3.84 here (Steinke et al.'s bound: 1.94). The auditor shows it beside its (ε, δ)
headline (``core.dp.audit``).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
from dp_accounting import get_epsilon_gaussian, get_sigma_gaussian
from scipy import optimize, special

from core.dp.audit_bounds import (AuditBound, cp_upper, guess_counts, guess_grid,
                                  ranked_guess_bound, threshold_cuts)

MU_TOL = 1e-10      # Brent's method stops within this of the root μ (ε̂ is reported to 1e-3)
SPLITS = 21         # random splits the median is taken over (odd: the median is one split's)
SPLIT_FRACTION = 0.5   # share of each class that chooses τ; the rest is audited at τ

STANDARD_NORMAL = NormalDist()

@functools.lru_cache(maxsize=4096)
def gdp_mu(epsilon: float, delta: float) -> float:
    """μ of the Gaussian mechanism (sensitivity 1) that is exactly (ε, δ)-DP: 1/σ(ε, δ)."""
    return 1.0 / get_sigma_gaussian(epsilon, delta)


def gaussian_blow_down(x: float, mu: float) -> float:
    """f̄(x) = Φ(Φ⁻¹(x) − μ) on floats (the standard library's: 2.7× scipy's scalar calls, in the
    recursion's inner loop)."""
    if x >= 1.0:
        return 1.0
    return 0.5 * math.erfc((mu - STANDARD_NORMAL.inv_cdf(x)) / math.sqrt(2.0))


def fdp_margin(mu: float, *, m: int, r: int, v: int, beta: float) -> float:
    """(r_ + h) − r/m at the end of the recursion (module doc): positive when v right guesses of
    r on m canaries reject μ-GDP at level β."""
    right, hedge = beta * v / m, beta * (r - v) / m
    for i in range(v - 1, -1, -1):
        moved = max(hedge, gaussian_blow_down(right, mu))
        if moved == hedge:
            break
        right = min(right + i / (r - i) * (moved - hedge), 1.0)
        hedge = moved
    return right + hedge - r / m


def fdp_mu(*, m: int, r: int, v: int, beta: float, floor_mu: float) -> float:
    """The μ where rejection of μ-GDP stops for r guesses with v right among m canaries (module
    doc); ``floor_mu`` if even that μ is not rejected."""
    margin = functools.partial(fdp_margin, m=m, r=r, v=v, beta=beta)
    if margin(floor_mu) <= 0:
        return floor_mu
    low, high = floor_mu, 2 * floor_mu
    while margin(high) > 0:   # ends: as μ grows f̄ → 0 and nothing is rejected
        low, high = high, 2 * high
    return float(optimize.brentq(margin, low, high, xtol=MU_TOL))


def fdp_epsilon(*, m: int, r: int, v: int, delta: float, beta: float,
                floor: float = 0.0) -> float:
    """ε̂ of r guesses with v right among m canaries (module doc); ``floor`` if even the ε at
    ``floor`` is not rejected."""
    floor_mu = gdp_mu(float(floor), delta)
    mu = fdp_mu(m=m, r=r, v=v, beta=beta, floor_mu=floor_mu)
    return float(floor) if mu <= floor_mu else _gdp_epsilon(mu, delta, floor)


def _gdp_epsilon(mu: float, delta: float, floor: float = 0.0) -> float:
    """The ε of μ-GDP at δ (the Gaussian mechanism's, σ = 1/μ), at least ``floor``."""
    return max(float(floor), float(get_epsilon_gaussian(1.0 / mu, delta)))


def best_threshold(scores: np.ndarray, members: np.ndarray, *, delta: float,
                   beta: float) -> tuple[float, float]:
    """(ε̂, τ) of the threshold τ with the largest ε̂ on these canaries. Thresholds are tried
    by decreasing Clopper–Pearson lower bound on their precision, and one whose precision is at
    most e^ε̂/(1 + e^ε̂) of the best so far is skipped (its guesses are no better than a coin
    of that bias); each is compared in μ (ε̂ grows with μ̂). (0, +∞) when no threshold rejects
    anything."""
    cuts, tp, fp = threshold_cuts(scores, members)
    guesses, m = tp + fp, len(scores)
    order = np.argsort(cp_upper(fp, guesses, beta), kind="stable")
    best, best_mu, best_cut = 0.0, gdp_mu(0.0, delta), np.inf
    for index in order:
        if tp[index] / guesses[index] <= special.expit(best):
            continue
        mu = fdp_mu(m=m, r=int(guesses[index]), v=int(tp[index]), beta=beta, floor_mu=best_mu)
        if mu > best_mu:
            best, best_mu, best_cut = _gdp_epsilon(mu, delta, best), mu, float(cuts[index])
    return best, best_cut


def _split(values: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(len(values))
    cut = int(len(values) * SPLIT_FRACTION)
    return values[order[:cut]], values[order[cut:]]


def split_audit(inside: np.ndarray, outside: np.ndarray, *, delta: float, beta: float,
                seed: int) -> tuple[float, float, dict[str, int]]:
    """One split (module doc): (ε̂ on the second part at the first part's τ, τ, its counts)."""
    rng = np.random.default_rng(seed)
    (in_choose, in_audit), (out_choose, out_audit) = _split(inside, rng), _split(outside, rng)
    _, cut = best_threshold(np.r_[in_choose, out_choose],
                            np.r_[np.ones(len(in_choose), bool), np.zeros(len(out_choose), bool)],
                            delta=delta, beta=beta)
    scores = np.r_[in_audit, out_audit]
    members = np.r_[np.ones(len(in_audit), bool), np.zeros(len(out_audit), bool)]
    counts = guess_counts(scores >= cut, members)
    guesses = counts["true_positives"] + counts["false_positives"]
    eps = fdp_epsilon(m=len(scores), r=guesses, v=counts["true_positives"], delta=delta,
                      beta=beta)
    return eps, cut, counts


def split_median_epsilon(inside, outside, *, delta: float, beta: float, splits: int,
                         rng: np.random.Generator) -> tuple[float, list]:
    """The median of ε̂ over ``splits`` splits, each at β/2 (module doc), and every split's
    (ε̂, τ, counts); the splits' seeds are drawn from ``rng``."""
    seeds = rng.integers(np.iinfo(np.int64).max, size=splits)
    audits = [split_audit(np.asarray(inside, float), np.asarray(outside, float), delta=delta,
                          beta=beta / 2, seed=int(seed)) for seed in seeds]
    return float(np.median([a[0] for a in audits])), audits


def fdp_bound(scores: np.ndarray, members: np.ndarray, *, delta: float, beta: float,
              rng: np.random.Generator, strategy: str = "bonferroni") -> AuditBound:
    """The f-DP one-run bound at level β with the guesses of ``strategy`` (module doc:
    ``bonferroni`` is the guess grid, ``split`` the split median), for ``split`` with the counts
    of a median split."""
    if strategy == "bonferroni":
        return ranked_guess_bound("fdp_one_run:bonferroni", scores, members,
                                  grid=guess_grid(len(scores)),
                                  epsilon_of=functools.partial(fdp_epsilon, delta=delta),
                                  beta=beta, rng=rng)
    eps, audits = split_median_epsilon(scores[members], scores[~members], delta=delta,
                                       beta=beta, splits=SPLITS, rng=rng)
    _, cut, counts = sorted(audits, key=lambda a: a[0])[len(audits) // 2]
    return AuditBound("fdp_one_run:split", eps, 1 - beta, sum(counts.values()), threshold=cut,
                      direction="above", nonmember_threshold=None, tests=2, **counts)
