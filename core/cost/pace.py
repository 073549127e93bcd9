"""The pace of a loaded model on this machine, measured in a few seconds: what the audit prices
its attacks' work at (``core.cost.estimate(..., pace=...)``), so that each attack's part of the
audit's bar matches its time and the ETA extrapolated from the bar holds.

A run's scoring and generation (``core.cost.work``'s "score" and "generate" items) are then
priced from the measurement instead of the model of the machine's matrix products:

- score:     tokens / scored (tokens scored per second under one model);
- generate:  calls x step + tokens x row (a decoding step's seconds whatever the batch, plus
             ``row`` per sample still going), a batch's samples leaving as they end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

CALIBRATION_STEPS = 64   # decoding steps of the batches that measure the generation pace
CALIBRATION_TOKENS = 48  # tokens of each random text that measures the scoring pace
REPEATS = 3              # measurements of each pace while they take under CALIBRATION_S (median)
CALIBRATION_S = 2.0
BATCHES = (64, 8)        # the two generation batches whose difference gives the per-row cost


@dataclass(frozen=True)
class Pace:
    """How fast this machine runs a loaded model (``measure_pace``): tokens ``scored`` per
    second; a decoding ``step``'s seconds whatever the batch plus ``row`` per sample still
    going."""

    scored: float
    step: float = 0.0
    row: float = 0.0

    def seconds(self, work) -> float | None:
        """The seconds of a scoring or generation ``Work``; None for other work."""
        if work.kind == "score":
            return work.tokens / self.scored
        if work.kind == "generate":
            return work.calls * self.step + work.tokens * self.row
        return None


def _repeated(measure: Callable[[], Any]) -> list:
    """``measure()`` up to ``REPEATS`` times, while they take under ``CALIBRATION_S`` in all."""
    began, results = time.perf_counter(), []
    while len(results) < REPEATS and (not results or time.perf_counter() - began < CALIBRATION_S):
        results.append(measure())
    return results


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


_PACES: dict[tuple, Pace] = {}


def _scoring_pace(lm) -> float:
    """Tokens per second of the scoring engine on random texts (fresh: never in the cache)."""
    from core.scoring import score_token_ids

    vocab = min(len(lm.tokenizer), lm.card.vocab_size)
    length = min(CALIBRATION_TOKENS, lm.card.context_length - 1)
    rows = (2**14 if lm.device.type == "cuda" else 2**10) // length
    score_token_ids(lm, [[0] * 8])   # the first call warms up

    def scoring() -> float:
        texts = np.random.default_rng().integers(vocab, size=(rows, length)).tolist()
        began = time.perf_counter()
        score_token_ids(lm, texts)
        return time.perf_counter() - began

    return rows * length / _median(_repeated(scoring))


def measure_pace(lm, *, generates: bool) -> Pace:
    """The pace of ``lm`` on this machine (medians of up to ``REPEATS`` measurements): the
    scoring engine on 1,024 tokens and, when a run ``generates``, batches of 64 and of 8 samples
    for ``CALIBRATION_STEPS`` steps. Kept per architecture, dtype and device: a series measures
    it once."""
    from core.generation.sampling import generate
    from core.scoring import Sampler

    key = (lm.card.architecture, lm.card.parameters, lm.card.dtype, str(lm.device), generates)
    if key in _PACES:
        return _PACES[key]
    pace = Pace(_scoring_pace(lm))
    if generates:
        steps = min(CALIBRATION_STEPS, lm.card.context_length - 1)
        runs = _repeated(lambda: [generate(lm, Sampler(top_k=40), [[]] * size, batch_size=size,
                                           max_new_tokens=steps) for size in BATCHES])
        (t_big, n_big), (t_small, n_small) = (
            (_median([r[i].seconds for r in runs]), _median([r[i].new_tokens for r in runs]))
            for i in range(len(BATCHES)))
        row = max(0.0, (t_big - t_small) / max(1, n_big - n_small))
        pace = Pace(pace.scored, max(0.0, t_big - row * n_big) / steps, row)
    return _PACES.setdefault(key, pace)
