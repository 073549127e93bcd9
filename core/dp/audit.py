"""Audit DP with canaries: statistically valid lower bounds on ε from member/non-member scores.

Each canary was included in training by a fair coin (``member``) and scored by an attack
(``score``, higher = more likely a member). ``audit_scores`` turns the scores into lower
bounds on ε at confidence 1 − β for a given δ, one per method: a bound (Clopper–Pearson, the
one-run bound of Steinke, Nasr & Jagielski 2023) with a threshold strategy (split, Bonferroni,
explicit; ``core.dp.audit_methods``), and, when the training's σ, q and steps are known, sets
them beside the accountant's ε (RDP of the subsampled Gaussian, converted at δ as Balle et al. 2020, Thm. 21):
the gap is how much of the guarantee the attack leaves unproven. Beside them, the f-DP one-run
bound (Mahloujifar, Melis & Chaudhuri 2025; ``core.dp.audit_fdp``) bounds the *Gaussian-DP* ε:
it proves the run is not μ-GDP at the μ of (ε̂, δ). For a mechanism whose trade-off curve is not
Gaussian it is no bound on (ε, δ) (randomised response at ε = 2: ε̂ = 3.8 from 10,000 guesses),
so it is shown beside the headline, never in it.

The headline ``epsilon_lower`` is the best of the (ε, δ) methods' bounds, and it holds at the
confidence 1 − β asked for: each of the M methods chosen runs at level β/M, so all M bounds
hold together with probability at least 1 − M·(β/M) = 1 − β (Bonferroni's union bound), and
then so does their maximum. (Each at β, the best of three would hold only at 1 − 3β: 85% for a
95% asked.)

``python -m core dp-audit --scores FILE.csv --delta 1e-5 --json``: the file holds one record
per canary with ``score`` and ``member`` (true/false), read row by row (``core.dp.audit_scores``).
``python -m core dp-audit --ngram --sigma 1 --q 1 --steps 3 --models 10000 --json``: the trials
are DP-SGD-trained n-gram models instead, one per canary, whose accountant's ε is known
(``core.dp.audit_ngram``).
"""

from __future__ import annotations

import threading
import time
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import paths
from core.bounds import training_run
from core.bounds.last_iterate import last_iterate_epsilon
from core.bounds.optimal import Mechanism, optimal_epsilon
from core.dp.audit_bounds import AuditBound
from core.dp.audit_methods import (DEFAULT_METHODS, GAUSSIAN_BOUNDS, Method, bound_name,
                                   canonical_methods, check_threshold, method_bound)
from core.dp.audit_scores import (MAX_ABS_SCORE, MAX_CANARIES, MIN_CANARIES, check_canaries,
                                  read_canaries, write_canaries)
from core.errors import UserError
from core.runtime import Cancelled, Progress, check_cancel, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, describe_bounds, param

METHODS: tuple[str, ...] = typing.get_args(Method)
HISTOGRAM_BINS = 40
AUDIT_STREAM = 0xA0D17   # keys the auditor's random stream apart from a plain seed's


def delta_param():
    """The δ field of an audit's (ε, δ) bounds (every DP audit's config has one)."""
    return param(1e-5, gt=0.0, le=0.1, label="δ", help="δ of the (ε, δ) bounds")


@dataclass(frozen=True)
class DpAuditConfig:
    """A file of scored canaries (or n-gram trials), δ and the confidence; optionally the
    training's σ, q, steps (needed by the n-gram trials, which train at them)."""

    scores: str = param("", path="data", label="canary scores",
                        help="CSV or JSONL with one record per canary: score (higher = more "
                             "likely a member) and member (true/false, decided by a fair coin)")
    delta: float = delta_param()
    confidence: float = param(0.95, ge=0.5, le=0.9999,
                              help="1 − β: the best of the methods' bounds holds with at least "
                                   "this probability (each method at 1 − β/M)")
    methods: tuple[Method, ...] = param(
        DEFAULT_METHODS, flags=("--method",),
        help="BOUND:THRESHOLD. Bounds: clopper_pearson (independent trials), one_run (Steinke "
             "et al. 2023, canaries in one run), fdp_one_run (Mahloujifar et al. 2025, one run, "
             "a Gaussian-DP ε). Thresholds: split (chosen on a held-out half), bonferroni "
             "(every threshold at once), explicit (the threshold given). The old names "
             "clopper_pearson, bonferroni, one_run, fdp_one_run are read as :split, "
             "clopper_pearson:bonferroni, :bonferroni, :bonferroni")
    threshold: float | None = param(None, ge=-MAX_ABS_SCORE, le=MAX_ABS_SCORE,
                                    label="explicit threshold",
                                    help="the explicit methods' threshold, fixed before the "
                                         "scores were seen: a score at or above it guesses "
                                         "member")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the half split and of tie-breaking")
    sigma: float = training_run.sigma_param()   # with q and steps: the accountant's ε beside
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()
    ngram: bool = param(False, label="n-gram trials", page="hidden",
                        help="instead of a scores file, train one DP-SGD n-gram model per "
                             "canary trial at σ, q = 1 and steps (Stock et al. §4.1), where "
                             "the accountant's ε is known")
    models: int = param(10_000, ge=MIN_CANARIES, le=MAX_CANARIES, label="n-gram models",
                        help="canary trials of the n-gram audit, one model each")

    def __post_init__(self) -> None:
        object.__setattr__(self, "methods", canonical_methods(self.methods))
        check_params(self)
        check_methods(self.methods)
        check_threshold(self.methods, self.threshold)
        if self.ngram:
            check_ngram(self)
        elif not self.scores.strip():
            raise UserError("choose a file of scored canaries (--scores): a CSV or JSONL with "
                            "score and member columns")


def check_methods(methods) -> None:
    """A ``UserError`` unless an (ε, δ) method is among ``methods`` (the headline's)."""
    if all(bound_name(m) in GAUSSIAN_BOUNDS for m in methods):
        raise UserError("choose at least one method of the clopper_pearson or one_run bound: "
                        "fdp_one_run bounds a Gaussian-DP ε and is shown beside them")


def check_ngram(config: DpAuditConfig) -> None:
    """A ``UserError`` unless the n-gram trials can train: a σ, full batches, no scores file."""
    if config.scores.strip():
        raise UserError("the n-gram audit trains its own canary trials: give no scores file")
    if not config.sigma:
        span = describe_bounds({"ge": training_run.SIGMA_MIN, "le": training_run.SIGMA_MAX})
        raise UserError(f"the n-gram trials train at the training run's σ: σ must be {span}, "
                        "not 0")
    if config.q != 1:
        raise UserError("the n-gram trials train on the whole data set at every step: q must be "
                        f"1, not {config.q:g}")


@dataclass
class ScoreHistogram:
    """Members' and non-members' scores over shared bins (``edges``: one more than counts)."""

    edges: list[float]
    members: list[int]
    nonmembers: list[int]


@dataclass
class NgramTrials:
    """The n-gram models an n-gram audit trained: one per canary trial (``core.dp.audit_ngram``)."""

    sigma: float
    steps: int
    models: int
    digits: int                         # the canary's length T
    symbols: int                        # its alphabet size D


@dataclass
class DpAuditResult:
    canaries: int
    members: int
    delta: float
    confidence: float                   # of each method's bound: 1 − β/M
    bounds: list[AuditBound]            # one per method (the main table)
    epsilon_lower: float                # the best of the (ε, δ) methods' bounds
    epsilon_lower_confidence: float     # 1 − β, as asked: the best of M bounds at 1 − β/M each
    best_method: str
    histogram: ScoreHistogram
    seconds: float
    # each bound's best over its methods (core.dp.audit_methods); None: not run
    epsilon_lower_clopper_pearson: float | None = None
    epsilon_lower_one_run: float | None = None
    epsilon_lower_fdp_one_run: float | None = None   # a Gaussian-DP ε (module doc)
    epsilon_upper: float | None = None  # the accountant's ε at δ, when σ, q, steps are known
    epsilon_gap: float | None = None    # epsilon_upper − epsilon_lower
    epsilon_last_iterate: float | None = None   # the heuristic ε of the final model (not a bound)
    stopped_early: bool = False
    trials: NgramTrials | None = None   # the n-gram models audited (None: a scores file)


def accountant_epsilon(*, sigma: float, q: float, steps: int, delta: float) -> float:
    """DP-SGD's ε at δ: RDP of the subsampled Gaussian at the optimal order α > 1, converted as
    Balle et al. (2020, Thm. 21) — Opacus' conversion."""
    return optimal_epsilon(Mechanism(q, sigma, steps), delta=delta)[0]


def run_epsilons(*, sigma: float, q: float, steps: int, delta: float) -> dict[str, float]:
    """The accountant's ε (composed, the guarantee) and the last-iterate heuristic's
    (``core.bounds.last_iterate``), as ``audit_scores`` takes them."""
    return {"epsilon_upper": accountant_epsilon(sigma=sigma, q=q, steps=steps, delta=delta),
            "epsilon_last_iterate": last_iterate_epsilon(sigma=sigma, q=q, steps=steps,
                                                         delta=delta)}


def score_histogram(scores: np.ndarray, members: np.ndarray) -> ScoreHistogram:
    edges = np.histogram_bin_edges(scores, bins=HISTOGRAM_BINS)
    return ScoreHistogram(edges.tolist(), np.histogram(scores[members], edges)[0].tolist(),
                          np.histogram(scores[~members], edges)[0].tolist())


def audit_scores(scores, members, *, delta: float = 1e-5, confidence: float = 0.95,
                 methods: tuple[str, ...] = DEFAULT_METHODS, seed: int = 0,
                 threshold: float | None = None,
                 epsilon_upper: float | None = None, epsilon_last_iterate: float | None = None,
                 progress: Progress = no_progress,
                 cancel: threading.Event | None = None) -> DpAuditResult:
    """Lower bounds on ε from canaries' ``scores`` and ``members`` (arrays), one per method at
    level β/M (in ``METHODS``' order; an explicit method at ``threshold``), and the best (ε, δ)
    one at ``confidence`` = 1 − β (module doc), beside the accountant's ``epsilon_upper`` if
    given. When cancelled, returns the methods done (``stopped_early``; fewer bounds at β/M
    each hold together all the more);
    raises ``Cancelled`` if no (ε, δ) method is."""
    started = time.perf_counter()
    scores, members = np.asarray(scores, dtype=float), np.asarray(members, dtype=bool)
    check_canaries(scores, members)
    methods = canonical_methods(methods)
    check_methods(methods)
    check_threshold(methods, threshold)
    chosen, bounds = tuple(m for m in METHODS if m in methods), []
    beta = (1 - confidence) / len(chosen)   # each method's share of β (Bonferroni)
    for index, method in enumerate(chosen):
        if is_cancelled(cancel):
            break
        # The auditor's own stream: the canaries' coins are often drawn with default_rng(seed),
        # and a tie-break or split drawn from that very stream would read the coins.
        rng = np.random.default_rng([AUDIT_STREAM, seed])
        bounds.append(method_bound(method, scores, members, delta=delta, beta=beta, rng=rng,
                                   threshold=threshold))
        progress((index + 1) / len(chosen), f"{method}: ε ≥ {bounds[-1].epsilon_lower:.3f}")
    headline_bounds = [b for b in bounds if bound_name(b.method) not in GAUSSIAN_BOUNDS]
    if not headline_bounds:
        raise Cancelled()
    best = max(headline_bounds, key=lambda b: b.epsilon_lower)
    return DpAuditResult(
        canaries=len(scores), members=int(members.sum()), delta=delta, confidence=1 - beta,
        bounds=bounds, epsilon_lower=best.epsilon_lower, best_method=best.method,
        epsilon_lower_confidence=confidence,
        histogram=score_histogram(scores, members), seconds=time.perf_counter() - started,
        epsilon_upper=epsilon_upper, epsilon_last_iterate=epsilon_last_iterate,
        epsilon_gap=None if epsilon_upper is None else epsilon_upper - best.epsilon_lower,
        stopped_early=len(bounds) < len(chosen), **best_by_bound(bounds))


def best_by_bound(bounds: list[AuditBound]) -> dict[str, float]:
    """``epsilon_lower_BOUND``: each bound's best ε over the methods run with it."""
    best: dict[str, float] = {}
    for b in bounds:
        key = f"epsilon_lower_{bound_name(b.method)}"
        best[key] = max(best.get(key, 0.0), b.epsilon_lower)
    return best


def run(config: DpAuditConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DpAuditResult:
    """Read the scored canaries (or train the n-gram trials), audit them, and set the
    accountant's ε beside (module doc)."""
    if config.ngram:
        from core.dp.audit_ngram import audit_ngram   # torch, only for the n-gram trials

        return audit_ngram(config, progress=progress, cancel=cancel)
    progress(0.0, "reading the scores")
    check_cancel(cancel)
    scores, members = read_canaries(config.scores)
    known = run_epsilons(sigma=config.sigma, q=config.q, steps=config.steps,
                         delta=config.delta) if config.sigma else {}
    return audit_scores(scores, members, delta=config.delta, confidence=config.confidence,
                        methods=config.methods, seed=config.seed, threshold=config.threshold,
                        **known, progress=progress, cancel=cancel)


def tiny_config() -> DpAuditConfig:
    """200 canaries whose members score 2 standard deviations higher, written under
    ``home()/tiny``: the likelihood ratio of 4 full-batch steps at σ = 1 (μ = 2 Gaussian DP),
    the setting the accountant's ε is computed for."""
    rng = np.random.default_rng(0)
    members = rng.random(200) < 0.5
    scores = rng.normal(2.0 * members, 1.0)
    path = write_canaries(paths.home() / "tiny" / "dp-audit-scores.csv", scores, members)
    return DpAuditConfig(scores=str(path), sigma=1.0, q=1.0, steps=4)


def headline(result: DpAuditResult) -> dict[str, float]:
    """The best (ε, δ) lower bound, each bound's best, the accountant's ε and the last-iterate
    heuristic's when known."""
    return {"epsilon_lower": result.epsilon_lower} | best_by_bound(result.bounds) | (
        {} if result.epsilon_upper is None else {"epsilon_upper": result.epsilon_upper}) | (
        {} if result.epsilon_last_iterate is None else
        {"epsilon_last_iterate": result.epsilon_last_iterate})


SPEC = AttackSpec(
    name="dp-audit",
    title="Audit DP with canaries (ε lower bounds)",
    config_type=DpAuditConfig,
    result_type=DpAuditResult,
    run=run,
    tiny_config=tiny_config,
    uses_gpu=lambda config: False,
    headline=headline,
    describe=lambda c: (f"DP audit of {c.models:,} n-gram models (σ = {c.sigma:g}, "
                        f"{c.steps:,} steps)" if c.ngram else
                        f"DP audit of {Path(c.scores).name}") + f" at δ = {c.delta:g}",
    table="bounds",
)
