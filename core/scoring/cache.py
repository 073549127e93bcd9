"""What the engine returns and keeps: per-sequence scores, and a bounded LRU cache of them keyed by
(model load, sampler, context, window, stride, tokens), so switching metrics costs nothing."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

CACHE_MAX_TOKENS = 4_000_000


@dataclass(frozen=True, eq=False)
class SequenceScores:
    """Scores of one sequence: ``logprobs[j]`` is log p(token_ids[first_scored + j] | all before).

    ``token_ids`` (int64) are the sequence's own tokens, without the prepended context token;
    ``logprobs`` (float32, read-only) has ``len(token_ids) - first_scored`` entries.
    """

    token_ids: np.ndarray
    logprobs: np.ndarray
    first_scored: int
    text: str | None = None

    @property
    def n_scored(self) -> int:
        return len(self.logprobs)

    @property
    def total_logprob(self) -> float:
        """log of the probability of the scored tokens (−inf when a sampler gives it 0)."""
        return float(self.logprobs.sum(dtype=np.float64))

    @property
    def perplexity(self) -> float:
        """exp(−mean log-prob) over the scored tokens (nan when none is scored)."""
        return math.exp(-self.total_logprob / self.n_scored) if self.n_scored else math.nan


class ScoreCache:
    """An LRU map from a scoring key to ``SequenceScores``, bounded by the tokens it holds."""

    def __init__(self, max_tokens: int = CACHE_MAX_TOKENS):
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple, SequenceScores] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> SequenceScores | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple, value: SequenceScores) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self._tokens += len(value.token_ids) + 1
            while self._tokens > self.max_tokens and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                self._tokens -= len(old.token_ids) + 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tokens = 0

    def __len__(self) -> int:
        return len(self._entries)


CACHE = ScoreCache()


def clear_cache() -> None:
    """Forget every cached score (e.g. after a model was changed in place)."""
    CACHE.clear()
