"""The one bootstrap: percentile intervals by ``scipy.stats.bootstrap``.

Several samples are resampled independently, each with replacement at its own size (e.g. the
held-in and the held-out users of a membership evaluation, as Kandpal et al. do); a statistic
may return several numbers at once (one interval each).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats


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
