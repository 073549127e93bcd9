"""Percentile bootstrap intervals.

Several samples are resampled independently, each with replacement at its own size (e.g. the
held-in and the held-out users of a membership evaluation, as Kandpal et al. do); a statistic
may return several numbers at once (one interval each). ``bootstrap_rows`` draws the resamples
as index matrices and hands the statistic whole batches of them (one resample a row), for
statistics vectorised over rows; ``bootstrap_interval`` goes through ``scipy.stats.bootstrap``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats

BATCH_CELLS = 2**21   # resampled values held at once by bootstrap_rows (all samples together)


def bootstrap_interval(samples: tuple[np.ndarray, ...], statistic: Callable[..., object], *,
                       resamples: int, confidence: float = 0.95, seed: int = 0,
                       vectorized: bool = False, batch: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval (low, high) of ``statistic(*samples)``; ``vectorized``
    statistics take an ``axis`` keyword; ``batch`` bounds the resamples held in memory."""
    result = stats.bootstrap(
        tuple(np.asarray(s) for s in samples), statistic, n_resamples=resamples,
        confidence_level=confidence, method="percentile", vectorized=vectorized,
        paired=False, batch=batch, rng=np.random.default_rng(seed))
    return (np.asarray(result.confidence_interval.low),
            np.asarray(result.confidence_interval.high))


def bootstrap_rows(samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], *,
                   resamples: int, confidence: float = 0.95, seed: int = 0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval (low, high) of a row-wise statistic.

    Each resample draws ``len(s)`` indices with replacement from every sample ``s``
    (``np.random.default_rng(seed)``); ``statistic(*rows)`` gets one (B, len(s)) matrix per
    sample, a batch of B resamples a row, and returns (B,) or (B, k) values. The interval is
    their (1 − confidence)/2 and (1 + confidence)/2 quantiles (``np.quantile``, linear).
    """
    samples = tuple(np.asarray(s) for s in samples)
    rng = np.random.default_rng(seed)
    per_batch = max(1, BATCH_CELLS // sum(len(s) for s in samples))
    values = []
    for start in range(0, resamples, per_batch):
        count = min(per_batch, resamples - start)
        values.append(statistic(*(s[rng.integers(0, len(s), (count, len(s)))] for s in samples)))
    tail = (1 - confidence) / 2
    low, high = np.quantile(np.concatenate(values), [tail, 1 - tail], axis=0)
    return low, high
