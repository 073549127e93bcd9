"""Membership evaluation: the vectorised bootstrap and knowledge curve against the per-resample
scikit-learn way they replaced, on synthetic scores at the size of a membership-inference run
(2,000 texts, 10 attacks, 1,000 resamples each).

The baselines (``old_interval``, ``old_knowledge_curve``) are the previous implementations:
``scipy.stats.bootstrap`` with a statistic that calls ``roc_curve`` once per resample, and one
``roc_auc_score`` per draw of the curve. ``bench_user_inference`` runs them on the demo's users.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.metrics import auc, roc_auc_score, roc_curve

from core.evaluation import membership as me
from core.evaluation.bootstrap import bootstrap_interval

TEXTS, ATTACKS, RESAMPLES = 2000, 10, 1000


def old_interval(labels, scores, *, resamples: int, seed: int = 0,
                 confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The previous bootstrap: (low, high) of AUROC and TPR at ``me.FPR_POINTS``, one
    ``roc_curve`` a resample through ``scipy.stats.bootstrap`` (members and non-members apart;
    every ROC point kept, as the point estimates now do)."""
    labels, scores = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)

    def statistic(inside, outside):
        truth = np.r_[np.ones(len(inside), dtype=int), np.zeros(len(outside), dtype=int)]
        fpr, tpr, _ = roc_curve(truth, np.r_[inside, outside], drop_intermediate=False)
        return np.array([auc(fpr, tpr), *(me.tpr_at_fpr(fpr, tpr, f) for f in me.FPR_POINTS)])

    # scipy wants two observations a sample: a group of one is given twice (same resamples)
    groups = tuple(np.repeat(g, 2) if len(g) == 1 else g
                   for g in (scores[labels == 1], scores[labels == 0]))
    return bootstrap_interval(groups, statistic, resamples=resamples, confidence=confidence,
                              seed=seed)


def old_knowledge_curve(values: dict[str, np.ndarray], members: dict[str, bool], *,
                        draws: int, seed: int = 0) -> list[tuple[int, float, float]]:
    """The previous curve: (m, mean, std) of one ``roc_auc_score`` per draw of m samples a user."""
    users = list(values)
    labels = np.array([members[u] for u in users], dtype=int)
    scores = [np.asarray(values[u], dtype=float) for u in users]
    rng = np.random.default_rng(seed)
    points = []
    for m in range(1, min(me.MAX_KNOWLEDGE_M, max(len(v) for v in scores)) + 1):
        aurocs = [roc_auc_score(labels, [rng.choice(v, min(m, len(v)), replace=False).mean()
                                         for v in scores]) for _ in range(draws)]
        points.append((m, float(np.mean(aurocs)), float(np.std(aurocs))))
    return points


def timed(run) -> tuple[object, float]:
    start = time.perf_counter()
    out = run()
    return out, time.perf_counter() - start


def main() -> None:
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(TEXTS // 2), np.zeros(TEXTS // 2)].astype(int)
    attacks = [rng.normal(labels * strength, 1.0) for strength in np.linspace(0, 1, ATTACKS)]
    me.evaluate(labels, attacks[0], bootstrap=RESAMPLES)  # warm-up (imports, first calls)
    results, new_s = timed(lambda: [me.evaluate(labels, s, bootstrap=RESAMPLES) for s in attacks])
    (low, high), old_s = timed(lambda: old_interval(labels, attacks[-1], resamples=RESAMPLES))
    print(f"{TEXTS} texts, {RESAMPLES} resamples (members and non-members apart)")
    print(f"ours (vectorised, {ATTACKS} attacks): {new_s:.2f} s, "
          f"{new_s / ATTACKS:.3f} s per attack")
    print(f"baseline (scipy.stats.bootstrap, roc_curve per resample, 1 attack): {old_s:.2f} s")
    print(f"ratio: {old_s / (new_s / ATTACKS):.1f}x")
    last = results[-1]
    print(f"AUROC CI ours {last.auroc_ci[0]:.4f}-{last.auroc_ci[1]:.4f}, "
          f"baseline {low[0]:.4f}-{high[0]:.4f}; TPR@1%FPR CI ours "
          f"{last.tpr_at_1pct_fpr_ci[0]:.4f}-{last.tpr_at_1pct_fpr_ci[1]:.4f}, "
          f"baseline {low[2]:.4f}-{high[2]:.4f}")


if __name__ == "__main__":
    main()
