"""Evaluation of a membership attack: ROC, AUROC, TPR at low FPR, bootstrap intervals, the
attacker-knowledge curve and a threshold calibrated on known non-members.

Scores are higher for "member" (held-in). The point estimates come from scikit-learn; TPR at a
target FPR takes the best existing ROC point (Carlini et al. 2022's convention, no
interpolation); intervals are percentile bootstraps that resample the members and the
non-members independently, each at its own size, as Kandpal et al. (2023, §4) do for users.
Resamples and knowledge-curve draws are scored a whole batch at a time: ``auroc_rows`` and
``tpr_at_fpr_rows`` take one resample (or draw) a row and equal scikit-learn row by row.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score, roc_curve

from core.errors import UserError
from core.runtime import is_cancelled
from core.specs import param
from core.evaluation.bootstrap import bootstrap_rows

TPR_FIELDS = {0.001: "tpr_at_01pct_fpr", 0.01: "tpr_at_1pct_fpr", 0.05: "tpr_at_5pct_fpr"}
FPR_POINTS = tuple(TPR_FIELDS)          # the FPRs at which TPR is reported
STATISTICS = ("auroc", *TPR_FIELDS.values())   # the bootstrapped figures, in _row_metrics' order
FPR_TOLERANCE = 1e-12                   # an ROC point at FPR target + rounding still counts
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 10, 100_000
MAX_KNOWLEDGE_M = 50
CURVE_CELLS = 2**22                     # prefix means held at once by the knowledge curve


def bootstrap_param(default: int) -> int:
    """A config field: bootstrap resamples, 0 (no intervals) or 10..100,000."""
    return param(default, ge=0, le=MAX_BOOTSTRAP, label="bootstrap resamples",
                 help=f"resamples for the 95% intervals: 0 for none, else at least {MIN_BOOTSTRAP}")


def check_bootstrap(bootstrap: int) -> None:
    """The part of the range ``param`` cannot say: 1..9 resamples make no interval."""
    if 0 < bootstrap < MIN_BOOTSTRAP:
        raise UserError(f"bootstrap resamples must be 0 (no intervals) or from {MIN_BOOTSTRAP} to "
                        f"{MAX_BOOTSTRAP:,}, not {bootstrap}")


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    """The highest TPR among ROC points whose FPR is at most ``target``.

    No interpolation between ROC points: the value is that of a threshold that exists
    (Carlini et al. 2022's convention), so with n non-members an FPR below 1/n allows
    no false positive at all. The ROC must keep every threshold
    (``roc_curve(..., drop_intermediate=False)``): a point dropped as collinear can be the best.
    """
    return float(np.max(tpr[fpr <= target + FPR_TOLERANCE]))


def allowed_false_positives(fpr: float, n: int) -> int:
    """k, the most of ``n`` non-members a threshold may flag at FPR ``fpr``: the largest k
    with k / n ≤ fpr (floor(fpr · n), computed as scikit-learn's ROC computes k / n)."""
    return int(np.searchsorted(np.arange(n + 1) / n, fpr + FPR_TOLERANCE, side="right")) - 1


def auroc_rows(inside: np.ndarray, outside: np.ndarray) -> np.ndarray:
    """AUROC of each row: members ``inside`` (B, n1) against non-members ``outside`` (B, n0).

    Mann–Whitney: AUROC = U / (n1 n0), U = (sum of the members' mid-ranks in the row) −
    n1 (n1 + 1) / 2; a tie between a member and a non-member counts one half, as in
    ``roc_auc_score``.
    """
    n1, n0 = inside.shape[1], outside.shape[1]
    ranks = rankdata(np.concatenate([inside, outside], axis=1), axis=1)
    return (ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)


def tpr_at_fpr_rows(inside: np.ndarray, outside: np.ndarray, target: float) -> np.ndarray:
    """``tpr_at_fpr`` of each row (members ``inside`` (B, n1), non-members ``outside`` (B, n0)).

    With k = ``allowed_false_positives(target, n0)``, the best threshold flags exactly the scores
    above v, the (k + 1)-th largest non-member: TPR = the fraction of members > v (1 if k = n0).
    """
    n0 = outside.shape[1]
    k = allowed_false_positives(target, n0)
    if k >= n0:
        return np.ones(len(inside))
    cut = np.partition(outside, n0 - 1 - k, axis=1)[:, n0 - 1 - k]
    return (inside > cut[:, None]).mean(axis=1)


@dataclass
class Metrics:
    """Attack success on one group (e.g. ``all``, ``real`` or ``canary`` users)."""

    group: str
    n_in: int
    n_out: int
    auroc: float
    tpr_at_1pct_fpr: float
    tpr_at_5pct_fpr: float
    tpr_at_01pct_fpr: float | None = None   # None in results stored before it was measured
    auroc_ci: list[float] = field(default_factory=list)   # [low, high]; empty without bootstrap
    tpr_at_01pct_fpr_ci: list[float] = field(default_factory=list)
    tpr_at_1pct_fpr_ci: list[float] = field(default_factory=list)
    tpr_at_5pct_fpr_ci: list[float] = field(default_factory=list)
    roc_fpr: list[float] = field(default_factory=list)
    roc_tpr: list[float] = field(default_factory=list)
    # 1 / n_out, the smallest non-zero FPR n_out non-members can show: a TPR at an FPR below it
    # is that of a threshold flagging no non-member at all
    fpr_resolution: float = field(init=False)

    def __post_init__(self) -> None:
        self.fpr_resolution = 1 / self.n_out


def _row_metrics(inside: np.ndarray, outside: np.ndarray) -> np.ndarray:
    """(B, 1 + len(FPR_POINTS)): AUROC and TPR at each of ``FPR_POINTS``, one resample a row."""
    return np.column_stack([auroc_rows(inside, outside),
                            *(tpr_at_fpr_rows(inside, outside, f) for f in FPR_POINTS)])


def evaluate(labels, scores, *, group: str = "all", bootstrap: int = 1000, seed: int = 0,
             confidence: float = 0.95) -> Metrics:
    """AUROC (``roc_auc_score``), TPR at 0.1%, 1% and 5% FPR and the ROC (``roc_curve``) of
    ``scores`` against ``labels`` (1 = member), with percentile bootstrap intervals from
    ``bootstrap`` resamples (0: none) of the members and of the non-members, independently
    (``core.evaluation.bootstrap.bootstrap_rows``)."""
    labels, scores = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    inside, outside = scores[labels == 1], scores[labels == 0]
    if not len(inside) or not len(outside):
        raise UserError(f"{group}: the evaluation needs both held-in and held-out users "
                        f"(got {len(inside)} in, {len(outside)} out)")
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    metrics = Metrics(group, len(inside), len(outside), float(roc_auc_score(labels, scores)),
                      roc_fpr=fpr.tolist(), roc_tpr=tpr.tolist(),
                      **{name: tpr_at_fpr(fpr, tpr, f) for f, name in TPR_FIELDS.items()})
    if bootstrap:
        # the scores' ranks among all of them (small integers): the same order, sorted faster
        codes = np.unique(np.r_[inside, outside], return_inverse=True)[1].astype(
            np.min_scalar_type(len(scores)))
        low, high = bootstrap_rows((codes[:len(inside)], codes[len(inside):]), _row_metrics,
                                   resamples=bootstrap, confidence=confidence, seed=seed)
        for name, a, b in zip(STATISTICS, low, high):
            setattr(metrics, f"{name}_ci", [float(a), float(b)])
    return metrics


@dataclass
class KnowledgePoint:
    """AUROC when the attacker holds m samples per user: mean and std over random draws."""

    m: int
    auroc_mean: float
    auroc_std: float
    users_short: int    # users with fewer than m samples (they use all theirs)


def _prefix_means(scores: list[np.ndarray], top_m: int, draws: int,
                  rng: np.random.Generator) -> np.ndarray:
    """(top_m, draws, users): for each draw, a random order of each user's samples, and the
    mean of its first m (all of them when the user has fewer than m), m = 1 .. top_m."""
    means = np.empty((top_m, draws, len(scores)))
    for column, values in enumerate(scores):
        shuffled = rng.permuted(np.tile(values, (draws, 1)), axis=1)[:, :top_m]
        prefix = np.cumsum(shuffled, axis=1) / np.arange(1, shuffled.shape[1] + 1)
        means[:, :, column] = np.pad(prefix, ((0, 0), (0, top_m - prefix.shape[1])), "edge").T
    return means


def _knowledge_aurocs(scores: list[np.ndarray], members: np.ndarray, top_m: int, draws: int,
                      rng: np.random.Generator, cancel: threading.Event | None) -> np.ndarray:
    """(top_m, draws) AUROC of the users' prefix means, in batches of draws that bound the
    memory; NaN where a cancel stopped it."""
    aurocs = np.full((top_m, draws), np.nan)
    batch = max(1, CURVE_CELLS // (top_m * len(scores)))
    for start in range(0, draws, batch):
        means = _prefix_means(scores, top_m, min(batch, draws - start), rng)
        for m, matrix in enumerate(means):
            if is_cancelled(cancel):
                return aurocs
            aurocs[m, start:start + len(matrix)] = auroc_rows(matrix[:, members],
                                                              matrix[:, ~members])
    return aurocs


def knowledge_curve(values: dict[str, np.ndarray], members: dict[str, bool | None], *,
                    max_m: int = MAX_KNOWLEDGE_M, draws: int = 100, seed: int = 0,
                    cancel: threading.Event | None = None) -> list[KnowledgePoint]:
    """Kandpal et al. Figure 5: AUROC of the mean of m random per-sample scores of each user
    (``values``), m = 1 .. min(max_m, the most samples any user has); a user with fewer than
    m samples uses all of theirs. Users whose membership is unknown are left out. A cancel
    keeps the points of the m whose draws all finished."""
    users = [u for u in values if members.get(u) is not None]
    labels = np.array([members[u] for u in users], dtype=bool)
    if labels.all() or not labels.any():
        raise UserError("the attacker-knowledge curve needs both held-in and held-out users")
    scores = [np.asarray(values[u], dtype=float) for u in users]
    top_m = min(max_m, max(len(v) for v in scores))
    aurocs = _knowledge_aurocs(scores, labels, top_m, draws, np.random.default_rng(seed), cancel)
    return [KnowledgePoint(m, float(np.mean(row)), float(np.std(row)),
                           sum(len(v) < m for v in scores))
            for m, row in enumerate(aurocs, 1) if not np.isnan(row).any()]


def calibrate_threshold(known_out: np.ndarray, fpr: float) -> float:
    """The threshold τ such that flagging score > τ flags k = ``allowed_false_positives(fpr, n)``
    (floor(fpr · n)) of the n scores known to be non-members: τ is the (k + 1)-th largest of
    them (the smallest when k = n)."""
    ordered = np.sort(np.asarray(known_out, dtype=float))[::-1]
    return float(ordered[min(allowed_false_positives(fpr, len(ordered)), len(ordered) - 1)])
