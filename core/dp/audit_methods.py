"""An audit method is two choices: the bound computed from the guesses, and how the threshold
that makes the guesses is picked (as google-deepmind/jax_privacy's ``auditing.py`` keeps its
``ThresholdStrategy`` apart from the bound). A method is named ``BOUND:THRESHOLD``.

Bounds (``core.dp.audit_bounds``, ``core.dp.audit_fdp``): ``clopper_pearson`` (TPR and FPR
bounded by Clopper–Pearson, turned into ε), ``one_run`` (Steinke, Nasr & Jagielski 2023) and
``fdp_one_run`` (Mahloujifar, Melis & Chaudhuri 2025, a Gaussian-DP ε).

Thresholds, each valid at the level β the method is given:

* ``bonferroni``: every threshold at once, β divided over the tries: Clopper–Pearson's count
  levels (``simultaneous_bound``), the one-run bounds' (k+, k−) guess grid;
* ``split``: chosen on a random half of the canaries (by class), the bound computed on the other
  half at it. Clopper–Pearson and ``one_run`` take one split (the threshold and its direction,
  or the grid's best (k+, k−) and its two score cuts); ``fdp_one_run`` the median of 21 splits
  (jax_privacy's ``MultiSplit``, members guessed only);
* ``explicit``: a threshold τ the user gives, fixed before the scores are seen: "member" for a
  score ≥ τ on every canary (Clopper–Pearson: and "non-member" below it; the one-run bounds
  abstain below it), one test at β.

The names before the split (``clopper_pearson``, ``bonferroni``, ``one_run``, ``fdp_one_run``)
are still read: ``canonical_methods`` maps them to ``clopper_pearson:split``,
``clopper_pearson:bonferroni``, ``one_run:bonferroni`` and ``fdp_one_run:bonferroni``.
"""

from __future__ import annotations

import functools
import typing
from typing import Literal

import numpy as np

from core.dp.audit_bounds import (AuditBound, guess_counts, guess_grid, one_run_bound,
                                  one_run_epsilon, ranked_guess_bound, rates_epsilon,
                                  simultaneous_bound, split_bound, stratified_half)
from core.dp.audit_fdp import fdp_bound, fdp_epsilon
from core.errors import UserError

Bound = Literal["clopper_pearson", "one_run", "fdp_one_run"]
Threshold = Literal["split", "bonferroni", "explicit"]
BOUNDS: tuple[str, ...] = typing.get_args(Bound)
THRESHOLDS: tuple[str, ...] = typing.get_args(Threshold)
Method = Literal[tuple(f"{b}:{t}" for b in BOUNDS for t in THRESHOLDS)]   # the 9 pairs
DEFAULT_METHODS = ("clopper_pearson:split", "clopper_pearson:bonferroni", "one_run:bonferroni",
                   "fdp_one_run:bonferroni")
LEGACY_METHODS = {"clopper_pearson": "clopper_pearson:split",
                  "bonferroni": "clopper_pearson:bonferroni",
                  "one_run": "one_run:bonferroni", "fdp_one_run": "fdp_one_run:bonferroni"}
GAUSSIAN_BOUNDS = ("fdp_one_run",)   # a Gaussian-DP ε: beside the headline, not in it
ONE_RUN_METHODS = ("one_run:bonferroni", "fdp_one_run:bonferroni")   # proven for one run


def canonical_methods(methods) -> tuple[str, ...]:
    """``methods`` with the old names mapped (module doc), each once, in their order."""
    return tuple(dict.fromkeys(LEGACY_METHODS.get(m, m) for m in methods))


def bound_name(method: str) -> str:
    """The bound of a method (``one_run`` for ``one_run:split``; an old name maps first)."""
    return LEGACY_METHODS.get(method, method).split(":")[0]


def threshold_name(method: str) -> str:
    """The threshold strategy of a method (``split`` for ``one_run:split``)."""
    return LEGACY_METHODS.get(method, method).split(":")[-1]


def check_threshold(methods, threshold: float | None) -> None:
    """A ``UserError`` unless an explicit method has its threshold (and only then one)."""
    explicit = [m for m in methods if threshold_name(m) == "explicit"]
    if explicit and threshold is None:
        raise UserError(f"{explicit[0]} needs the threshold it guesses at: give --threshold "
                        "(a score: 'member' at or above it)")
    if threshold is not None and not explicit:
        raise UserError("a threshold is used by the explicit methods only: add one (e.g. "
                        "one_run:explicit) or leave the threshold out")


def method_bound(method: str, scores: np.ndarray, members: np.ndarray, *, delta: float,
                 beta: float, rng: np.random.Generator,
                 threshold: float | None = None) -> AuditBound:
    """The bound of ``method`` at level β on these canaries (module doc)."""
    bound, strategy = bound_name(method), threshold_name(method)
    if strategy == "explicit":
        return explicit_bound(bound, scores, members, delta=delta, beta=beta,
                              threshold=float(threshold))
    if bound == "clopper_pearson" and strategy == "split":
        return split_bound(scores, members, delta=delta, beta=beta, rng=rng)
    if bound == "clopper_pearson":
        return simultaneous_bound(scores, members, delta=delta, beta=beta)
    if bound == "fdp_one_run":
        return fdp_bound(scores, members, delta=delta, beta=beta, rng=rng, strategy=strategy)
    if strategy == "split":
        return split_guess_bound(scores, members, delta=delta, beta=beta, rng=rng)
    return one_run_bound(scores, members, delta=delta, beta=beta, rng=rng)


def _guesses_epsilon(bound: str, *, m: int, r: int, v: int, delta: float, beta: float) -> float:
    """ε̂ of r guesses with v right among m canaries by a one-run bound."""
    epsilon_of = fdp_epsilon if bound == "fdp_one_run" else one_run_epsilon
    return epsilon_of(m=m, r=r, v=v, delta=delta, beta=beta)


def explicit_bound(bound: str, scores: np.ndarray, members: np.ndarray, *, delta: float,
                   beta: float, threshold: float) -> AuditBound:
    """The bound at the given threshold τ, one test at β (module doc)."""
    guess = scores >= threshold
    if bound == "clopper_pearson":
        counts = guess_counts(guess, members)
        eps = float(rates_epsilon(counts["true_positives"], counts["false_positives"],
                                   members.sum(), (~members).sum(), beta / 2, delta))
    else:
        counts = guess_counts(guess[guess], members[guess])
        eps = _guesses_epsilon(bound, m=len(scores), r=int(guess.sum()),
                               v=counts["true_positives"], delta=delta, beta=beta)
    return AuditBound(f"{bound}:explicit", eps, 1 - beta, len(scores), threshold=threshold,
                      direction="above", nonmember_threshold=None, tests=1, **counts)


def split_guess_bound(scores: np.ndarray, members: np.ndarray, *, delta: float, beta: float,
                      rng: np.random.Generator) -> AuditBound:
    """Steinke et al.'s guesser with its (k+, k−) chosen on a random half (the grid's best
    there) and its two score cuts applied to the other half, where ε̂ is computed at β: the
    held-out canaries' coins are independent of the choice."""
    first = stratified_half(members, rng)
    chosen = ranked_guess_bound("one_run:split", scores[first], members[first],
                                grid=guess_grid(int(first.sum())),
                                epsilon_of=functools.partial(one_run_epsilon, delta=delta),
                                beta=beta, rng=rng)
    held, held_members = scores[~first], members[~first]
    guess_member = held >= chosen.threshold
    guess_non = ((held <= chosen.nonmember_threshold) & ~guess_member
                 if chosen.nonmember_threshold is not None else np.zeros(len(held), bool))
    counted = guess_member | guess_non
    counts = guess_counts(guess_member[counted], held_members[counted])
    eps = one_run_epsilon(m=len(held), r=int(counted.sum()),
                          v=counts["true_positives"] + counts["true_negatives"], delta=delta,
                          beta=beta)
    return AuditBound("one_run:split", eps, 1 - beta, len(held), threshold=chosen.threshold,
                      direction="above", nonmember_threshold=chosen.nonmember_threshold,
                      tests=1, **counts)
