"""Statistically valid lower bounds on ε from membership guesses on canaries (pure numpy/scipy).

Each canary is included in training by a fair coin (``members``); an attack gives it a
``score``, higher meaning "more likely a member". Three bounds, each holding with probability
at least 1 − β over the coins and the training:

* ``split_bound`` ("clopper_pearson:split", Jagielski et al. 2020; Nasr et al. 2023): the
  canaries are split in two halves at random (by class, seeded); the threshold τ and the
  direction ("score ≥ τ guesses member", or ≤) are chosen on the first half, where they
  maximise the bound below; on the second half the guesses give TP, FP, TN, FN and one-sided
  Clopper–Pearson bounds TPR ≥ TPR_lo and FPR ≤ FPR_hi, each at level β/2. An (ε, δ)-DP
  mechanism has TPR ≤ e^ε FPR + δ and TNR ≤ e^ε FNR + δ for every test, so

      ε ≥ max(log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)), 0).

* ``simultaneous_bound`` ("clopper_pearson:bonferroni"): all canaries, every threshold at once (direction
  "score ≥ τ"). A grid of score thresholds cannot be fixed before the scores are seen (their
  scale is the attack's), so the Bonferroni grid is one of counts: for a count level k the
  event "some τ with TP(τ) ≥ k has TPR(τ) < CP_lo(k)" has probability at most the level
  (it implies S(X_(k)) < CP_lo(k) for the k-th largest member score X_(k), S(τ) = P[X ≥ τ],
  and S(X_(k)) is stochastically no smaller than the k-th smallest of n uniforms), and
  likewise "some τ with FP(τ) ≤ j has FPR(τ) > CP_hi(j)". β is divided over the L
  non-trivial levels of both grids (0, 1, ⌊1.5^i⌋ and n minus those); TP is rounded down and
  FP up to a level, and the bound holds for every τ together, so the best τ may be reported.

* ``one_run_bound`` ("one_run:bonferroni"; Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One
  (1) Training Run", NeurIPS 2023): the auditor guesses "member" for the k+ highest scores and
  "non-member" for the k− lowest and abstains on the rest (ties broken by the auditor's own
  random draw, never by membership); with r = k+ + k− guesses, v of them right, and m
  canaries, their main theorem (the p-value their Appendix D code ``p_value_DP_audit``
  computes) bounds, for any (ε, δ)-DP training with B ~ Binomial(r, e^ε/(1 + e^ε)),

      P[v correct or more] ≤ p(ε) = P[B ≥ v] + 2mδ · max_{1 ≤ i ≤ v} P[v − i ≤ B < v]/i.

  ε_lo is the largest ε, on a grid of ``EPS_STEP``, such that p ≤ β on all of [0, ε_lo]: on each
  grid cell [a, b], p is at most P[B_b ≥ v] + 2mδ max_i (P[B_b ≥ v − i] − P[B_a ≥ v])/i (both
  tails grow with ε), so no ε between grid points escapes the test, whether or not p is
  monotone. (k+, k−) is searched over ``guess_grid`` with β divided by its size (Bonferroni).

The third bound, ``fdp_one_run`` (Mahloujifar, Melis & Chaudhuri, ICML 2025), tests a
Gaussian trade-off curve instead of (ε, δ) from the same guesses: ``core.dp.audit_fdp``.
Each bound with each way of picking its threshold (split, Bonferroni, explicit):
``core.dp.audit_methods``.

Which bound is valid where: the Clopper–Pearson bounds treat canaries as independent
trials (one model per canary, as in the n-gram Monte Carlo, or many training runs); the
canaries of one training run are not independent trials, and there only the one-run bounds
(``one_run``, ``fdp_one_run``) are proven (they analyse the guesses of one run as a whole).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special, stats

EPS_STEP = 0.01           # resolution of the one-run ε search (the bound is rounded down to it)
EPS_CHUNK = 64            # grid points of ε evaluated at once (stops at the first not rejected)
LEVEL_RATIO = 1.5         # count levels of the simultaneous bound: 0, 1, ⌊1.5^i⌋, n − those
GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)   # share of canaries the one-run auditor guesses

@dataclass
class AuditBound:
    """One method's lower bound on ε, the guesses' counts and where it cut the scores."""

    method: str                # BOUND:THRESHOLD (core.dp.audit_methods)
    epsilon_lower: float
    confidence: float          # 1 − β: the bound holds with at least this probability
    canaries: int              # canaries counted (the held-out half for clopper_pearson)
    true_positives: int        # guessed member, is a member
    false_positives: int
    true_negatives: int        # guessed non-member, is one
    false_negatives: int
    threshold: float           # "above": score ≥ it guesses member; "below": score ≤ it
    direction: Literal["above", "below"]
    nonmember_threshold: float | None   # one_run: score ≤ it guesses non-member (else abstain)
    tests: int                 # the bounds β is divided over (Bonferroni)


def cp_lower(successes, trials, alpha):
    """One-sided Clopper–Pearson lower bound on a binomial p at level α: the p with
    P[Binomial(trials, p) ≥ successes] = α, i.e. Beta(α; k, n − k + 1); 0 when k = 0."""
    k, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)


def cp_upper(successes, trials, alpha):
    """One-sided Clopper–Pearson upper bound at level α: Beta(1 − α; k + 1, n − k); 1 when k = n."""
    k, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, n - k), 1.0)


def epsilon_from_rates(tpr_lower, fpr_upper, delta: float):
    """max(log((TPR − δ)/FPR), log((1 − FPR − δ)/(1 − TPR)), 0) at the bounds (module doc)."""
    tpr, fpr = np.asarray(tpr_lower, dtype=float), np.asarray(fpr_upper, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.log((tpr - delta) / fpr)
        complement = np.log((1 - fpr - delta) / (1 - tpr))
    best = np.nan_to_num(np.fmax(direct, complement), nan=0.0, neginf=0.0, posinf=0.0)
    return np.maximum(best, 0.0)


def threshold_cuts(scores: np.ndarray, members: np.ndarray):
    """For every distinct score τ, highest first: τ, #members and #non-members scoring ≥ τ."""
    order = np.argsort(-scores, kind="stable")
    ranked, is_member = scores[order], members[order]
    last_of_tie = np.r_[ranked[1:] != ranked[:-1], True]
    return (ranked[last_of_tie], np.cumsum(is_member)[last_of_tie],
            np.cumsum(~is_member)[last_of_tie])


def guess_counts(guess_member: np.ndarray, members: np.ndarray) -> dict[str, int]:
    """TP, FP, TN, FN of the guesses ``guess_member`` against the coins ``members``."""
    return {"true_positives": int(np.sum(guess_member & members)),
            "false_positives": int(np.sum(guess_member & ~members)),
            "true_negatives": int(np.sum(~guess_member & ~members)),
            "false_negatives": int(np.sum(~guess_member & members))}


def rates_epsilon(tp, fp, n_members, n_nonmembers, alpha, delta):
    return epsilon_from_rates(cp_lower(tp, n_members, alpha), cp_upper(fp, n_nonmembers, alpha),
                              delta)


def stratified_half(members: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A mask of half the members and half the non-members, drawn at random (independent of
    the scores, so the other half tests the threshold chosen on this one)."""
    first = np.zeros(len(members), dtype=bool)
    for label in (True, False):
        where = rng.permutation(np.flatnonzero(members == label))
        first[where[:len(where) // 2]] = True
    return first


def split_bound(scores: np.ndarray, members: np.ndarray, *, delta: float, beta: float,
                rng: np.random.Generator) -> AuditBound:
    """Clopper–Pearson on the held-out half at the threshold chosen on the first (module doc)."""
    first, alpha = stratified_half(members, rng), beta / 2
    choices = []
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        cuts, tp, fp = threshold_cuts(sign * scores[first], members[first])
        eps = rates_epsilon(tp, fp, members[first].sum(), (~members[first]).sum(), alpha, delta)
        best = int(np.argmax(eps))
        choices.append((float(eps[best]), direction, sign, float(cuts[best])))
    _, direction, sign, cut = max(choices, key=lambda c: c[0])
    held_scores, held_members = sign * scores[~first], members[~first]
    counts = guess_counts(held_scores >= cut, held_members)
    eps = rates_epsilon(counts["true_positives"], counts["false_positives"], held_members.sum(),
                         (~held_members).sum(), alpha, delta)
    return AuditBound("clopper_pearson:split", float(eps), 1 - beta, int(len(held_members)),
                      threshold=sign * cut, direction=direction, nonmember_threshold=None,
                      tests=2, **counts)


def count_levels(n: int) -> np.ndarray:
    """The count grid of the simultaneous bound: 0, 1, ⌊1.5^i⌋ and n minus each, within [0, n]."""
    powers = np.floor(LEVEL_RATIO ** np.arange(int(np.log(max(n, 1)) / np.log(LEVEL_RATIO)) + 2))
    return np.unique(np.clip(np.r_[0, powers, n - powers, n], 0, n)).astype(int)


def simultaneous_bound(scores: np.ndarray, members: np.ndarray, *, delta: float,
                       beta: float) -> AuditBound:
    """Clopper–Pearson on all canaries, valid for every threshold at once (module doc)."""
    n_members, n_nonmembers = int(members.sum()), int((~members).sum())
    tp_levels, fp_levels = count_levels(n_members), count_levels(n_nonmembers)
    tests = int(np.sum(tp_levels > 0) + np.sum(fp_levels < n_nonmembers))  # the others are sure
    alpha = beta / tests
    cuts, tp, fp = threshold_cuts(scores, members)
    tp_floor = tp_levels[np.searchsorted(tp_levels, tp, side="right") - 1]
    fp_ceiling = fp_levels[np.searchsorted(fp_levels, fp, side="left")]
    eps = rates_epsilon(tp_floor, fp_ceiling, n_members, n_nonmembers, alpha, delta)
    best = int(np.argmax(eps))
    counts = guess_counts(scores >= cuts[best], members)
    return AuditBound("clopper_pearson:bonferroni", float(eps[best]), 1 - beta, len(scores),
                      threshold=float(cuts[best]), direction="above", nonmember_threshold=None,
                      tests=tests, **counts)


def one_run_tails(*, r: int, v: int, epsilons: np.ndarray) -> np.ndarray:
    """P[B_ε ≥ v − i] for i = 0..v (columns), B_ε ~ Binomial(r, e^ε/(1 + e^ε)) (rows: ε): the
    tail P[B ≥ v] from scipy, then P[B = j] added for j = v − 1 down to 0, each from its log
    log C(r, j) + j log q + (r − j) log(1 − q) (all terms positive: no cancellation; one tail
    per ε instead of v + 1: 4–7× faster at v from 1,000 to 15,000)."""
    epsilons = np.asarray(epsilons, dtype=float)
    top = stats.binom.sf(v - 1, r, special.expit(epsilons))
    j = np.arange(v - 1, -1, -1)
    log_choose = special.gammaln(r + 1) - special.gammaln(j + 1) - special.gammaln(r - j + 1)
    log_pmf = (log_choose + j * special.log_expit(epsilons)[:, None]
               + (r - j) * special.log_expit(-epsilons)[:, None])
    return np.column_stack([top, top[:, None] + np.cumsum(np.exp(log_pmf), axis=1)])


def one_run_p_value(*, m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """p(ε) of Steinke et al.'s main theorem (module doc) at one ε."""
    if v == 0:
        return 1.0
    tails = one_run_tails(r=r, v=v, epsilons=np.array([epsilon]))[0]
    spread = np.max((tails[1:] - tails[0]) / np.arange(1, v + 1))
    return float(min(tails[0] + 2 * m * delta * spread, 1.0))


def one_run_epsilon(*, m: int, r: int, v: int, delta: float, beta: float) -> float:
    """The largest grid ε with p ≤ β on all of [0, ε] (module doc); 0 when p(0) > β."""
    if v == 0:
        return 0.0
    steps = np.arange(1, v + 1)
    rejected, last = 0, one_run_tails(r=r, v=v, epsilons=np.zeros(1))[0]
    while True:  # ends: P[B_ε ≥ v] → 1 as ε grows, so some cell is not rejected
        grid = EPS_STEP * np.arange(rejected + 1, rejected + 1 + EPS_CHUNK)
        tails = one_run_tails(r=r, v=v, epsilons=grid)
        lower_tail = np.r_[last[0], tails[:-1, 0]]           # P[B_a ≥ v] at each cell's start
        spread = np.max((tails[:, 1:] - lower_tail[:, None]) / steps, axis=1)
        bad = np.flatnonzero(tails[:, 0] + 2 * m * delta * spread > beta)
        if bad.size:
            return float(EPS_STEP * (rejected + bad[0]))
        rejected, last = rejected + EPS_CHUNK, tails[-1]


def guess_grid(m: int) -> list[tuple[int, int]]:
    """(k+, k−) pairs the one-run auditor tries: a share f of the m canaries guessed, either
    half as members and half as non-members, or all as members."""
    pairs = []
    for share in GUESS_FRACTIONS:
        guesses = max(1, int(round(share * m)))
        pairs += [(guesses - guesses // 2, guesses // 2), (guesses, 0)]
    return list(dict.fromkeys(pairs))


def ranked_guess_bound(method: str, scores: np.ndarray, members: np.ndarray, *,
                       grid: list[tuple[int, int]], epsilon_of, beta: float,
                       rng: np.random.Generator) -> AuditBound:
    """The abstaining guesser's best (k+, k−) of ``grid``: "member" for the k+ highest scores,
    "non-member" for the k− lowest (ties in the auditor's random order), each pair's ε̂ from
    ``epsilon_of(m=, r=, v=, beta=)`` at β/|grid| (Bonferroni)."""
    m = len(scores)
    order = np.lexsort((rng.random(m), -scores))     # highest first, ties in a random order
    ranked = members[order]
    best = None
    for k_plus, k_minus in grid:
        guess = np.zeros(m, dtype=bool)
        guess[:k_plus] = True
        counted = np.r_[np.ones(k_plus, bool), np.zeros(m - k_plus - k_minus, bool),
                        np.ones(k_minus, bool)]
        counts = guess_counts(guess[counted], ranked[counted])
        correct = counts["true_positives"] + counts["true_negatives"]
        eps = epsilon_of(m=m, r=k_plus + k_minus, v=correct, beta=beta / len(grid))
        if best is None or eps > best[0]:
            best = (eps, k_plus, k_minus, counts)
    eps, k_plus, k_minus, counts = best
    ranked_scores = scores[order]
    return AuditBound(method, eps, 1 - beta, m, threshold=float(ranked_scores[k_plus - 1]),
                      direction="above",
                      nonmember_threshold=float(ranked_scores[m - k_minus]) if k_minus else None,
                      tests=len(grid), **counts)


def one_run_bound(scores: np.ndarray, members: np.ndarray, *, delta: float, beta: float,
                  rng: np.random.Generator) -> AuditBound:
    """Steinke et al.'s abstaining guesser, the best (k+, k−) of ``guess_grid`` (module doc)."""
    return ranked_guess_bound("one_run:bonferroni", scores, members, grid=guess_grid(len(scores)),
                              epsilon_of=functools.partial(one_run_epsilon, delta=delta),
                              beta=beta, rng=rng)
