"""Evaluation of a membership attack: ROC, AUROC, TPR at low FPR, bootstrap intervals, the
attacker-knowledge curve and a threshold calibrated on known non-members.

Scores are higher for "member" (held-in). AUROC and the ROC come from scikit-learn; TPR at a
target FPR takes the best existing ROC point (Carlini et al. 2022's convention, no
interpolation); intervals are percentile bootstraps that resample the members and the
non-members independently, each at its own size, as Kandpal et al. (2023, §4) do for users.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import auc, roc_auc_score, roc_curve

from core.errors import UserError
from core.runtime import is_cancelled
from core.specs import param
from core.stats import bootstrap_interval

FPR_POINTS = (0.01, 0.05)
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 10, 100_000
MAX_KNOWLEDGE_M = 50


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
    no false positive at all.
    """
    return float(np.max(tpr[fpr <= target + 1e-12]))


@dataclass
class Metrics:
    """Attack success on one group (e.g. ``all``, ``real`` or ``canary`` users)."""

    group: str
    n_in: int
    n_out: int
    auroc: float
    tpr_at_1pct_fpr: float
    tpr_at_5pct_fpr: float
    auroc_ci: list[float] = field(default_factory=list)   # [low, high]; empty without bootstrap
    tpr_at_1pct_fpr_ci: list[float] = field(default_factory=list)
    tpr_at_5pct_fpr_ci: list[float] = field(default_factory=list)
    roc_fpr: list[float] = field(default_factory=list)
    roc_tpr: list[float] = field(default_factory=list)


def _scalar_metrics(inside: np.ndarray, outside: np.ndarray) -> np.ndarray:
    """AUROC and TPR at each of ``FPR_POINTS`` of member scores against non-member scores."""
    labels = np.r_[np.ones(len(inside), dtype=int), np.zeros(len(outside), dtype=int)]
    fpr, tpr, _ = roc_curve(labels, np.r_[inside, outside])
    return np.array([auc(fpr, tpr), *(tpr_at_fpr(fpr, tpr, f) for f in FPR_POINTS)])


def evaluate(labels, scores, *, group: str = "all", bootstrap: int = 1000, seed: int = 0,
             confidence: float = 0.95) -> Metrics:
    """AUROC (``roc_auc_score``), TPR at 1% / 5% FPR and the ROC of ``scores`` against
    ``labels`` (1 = member), with percentile bootstrap intervals from ``bootstrap`` resamples
    (0: none) of the members and of the non-members, independently (``core.stats``)."""
    labels, scores = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    inside, outside = scores[labels == 1], scores[labels == 0]
    if not len(inside) or not len(outside):
        raise UserError(f"{group}: the evaluation needs both held-in and held-out users "
                        f"(got {len(inside)} in, {len(outside)} out)")
    fpr, tpr, _ = roc_curve(labels, scores)
    metrics = Metrics(group, len(inside), len(outside), float(roc_auc_score(labels, scores)),
                      tpr_at_fpr(fpr, tpr, 0.01), tpr_at_fpr(fpr, tpr, 0.05),
                      roc_fpr=fpr.tolist(), roc_tpr=tpr.tolist())
    if bootstrap:
        # A group of one is given twice: its resamples are then as before (always itself), the
        # metrics (fractions of users) do not change, and scipy wants two observations a sample.
        groups = tuple(np.repeat(g, 2) if len(g) == 1 else g for g in (inside, outside))
        low, high = bootstrap_interval(groups, _scalar_metrics, resamples=bootstrap,
                                       confidence=confidence, seed=seed)
        metrics.auroc_ci, metrics.tpr_at_1pct_fpr_ci, metrics.tpr_at_5pct_fpr_ci = (
            [float(low[i]), float(high[i])] for i in range(3))
    return metrics


@dataclass
class KnowledgePoint:
    """AUROC when the attacker holds m samples per user: mean and std over random draws."""

    m: int
    auroc_mean: float
    auroc_std: float
    users_short: int    # users with fewer than m samples (they use all theirs)


def knowledge_curve(values: dict[str, np.ndarray], members: dict[str, bool | None], *,
                    max_m: int = MAX_KNOWLEDGE_M, draws: int = 100, seed: int = 0,
                    cancel: threading.Event | None = None) -> list[KnowledgePoint]:
    """Kandpal et al. Figure 5: AUROC of the mean of m random per-sample scores of each user
    (``values``), m = 1 .. min(max_m, the most samples any user has); a user with fewer than
    m samples uses all of theirs. Users whose membership is unknown are left out."""
    users = [u for u in values if members.get(u) is not None]
    labels = np.array([members[u] for u in users], dtype=int)
    scores = [np.asarray(values[u], dtype=float) for u in users]
    rng = np.random.default_rng(seed)
    points = []
    for m in range(1, min(max_m, max(len(v) for v in scores)) + 1):
        if is_cancelled(cancel):
            break
        aurocs = [roc_auc_score(labels, [rng.choice(v, min(m, len(v)), replace=False).mean()
                                         for v in scores]) for _ in range(draws)]
        points.append(KnowledgePoint(m, float(np.mean(aurocs)), float(np.std(aurocs)),
                                     sum(len(v) < m for v in scores)))
    return points


def calibrate_threshold(known_out: np.ndarray, fpr: float) -> float:
    """The threshold τ such that flagging score > τ flags floor(fpr · n) of the n scores known
    to be non-members (their (1 − fpr) empirical quantile): τ is the (floor(fpr · n) + 1)-th
    largest of them."""
    ordered = np.sort(np.asarray(known_out, dtype=float))[::-1]
    return float(ordered[min(int(np.floor(fpr * len(ordered) + 1e-9)), len(ordered) - 1)])
