"""Membership metrics of generated samples and their trigram de-duplication (Carlini et al.,
*Extracting Training Data from Large Language Models*, USENIX Security 2021, §5.2-§5.3).

Every metric reads per-token log-probabilities and is oriented as in the paper's code, higher
meaning more likely memorised (log ppl = −mean log p of the sample under a model):

* ``perplexity``: −log ppl_target;
* ``reference``: log ppl_reference / log ppl_target (a smaller or earlier model, same vocabulary);
* ``zlib``: zlib entropy (bits of the zlib-compressed UTF-8 text) / log ppl_target;
* ``lowercase``: log ppl_target(lowercased text) / log ppl_target;
* ``window``: −log of the minimum perplexity over sliding windows of ``window`` tokens.

Near-duplicates are removed while a ranking is read: s is a duplicate of an already kept s'
when their word-trigram multisets share |tri(s) ∩ tri(s')| ≥ |tri(s)|/2 (§5.3).
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

LOG_PPL_FLOOR = 1e-6  # log perplexity of a sample the model predicts perfectly, for the ratios


@dataclass(frozen=True)
class Sample:
    """What the metrics read of one sample."""

    text: str
    target: np.ndarray                    # per-token log p under the target
    window: int = 50                      # tokens of the window metric
    reference: np.ndarray | None = None   # the reference model's log p of the same tokens
    lowercase: np.ndarray | None = None   # the target's log p of the lowercased text


def log_perplexity(logprobs: np.ndarray) -> float:
    """Mean negative log-likelihood, floored at ``LOG_PPL_FLOOR`` so that ratios stay finite."""
    return max(-float(np.mean(logprobs, dtype=np.float64)), LOG_PPL_FLOOR)


def min_window_log_perplexity(logprobs: np.ndarray, window: int) -> float:
    """min over windows of ``window`` consecutive tokens of their log perplexity (the whole
    sample when it is shorter)."""
    lp = np.asarray(logprobs, dtype=np.float64)
    if len(lp) <= window:
        return log_perplexity(lp)
    sums = np.convolve(lp, np.ones(window), mode="valid")
    return max(-float(sums.max()) / window, LOG_PPL_FLOOR)


def zlib_bits(text: str) -> int:
    """Bits of the zlib-compressed UTF-8 text (the paper's zlib entropy)."""
    return 8 * len(zlib.compress(text.encode("utf-8")))


def _perplexity(s: Sample) -> float:
    return -log_perplexity(s.target)


def _reference(s: Sample) -> float:
    return log_perplexity(s.reference) / log_perplexity(s.target)


def _zlib(s: Sample) -> float:
    return zlib_bits(s.text) / log_perplexity(s.target)


def _lowercase(s: Sample) -> float:
    return log_perplexity(s.lowercase) / log_perplexity(s.target)


def _window(s: Sample) -> float:
    return -min_window_log_perplexity(s.target, s.window)


class Metric(NamedTuple):
    description: str
    function: Callable[[Sample], float]
    needs: str | None = None   # the Sample field it reads beyond the target's log-probs


METRICS: dict[str, Metric] = {
    "perplexity": Metric("−log perplexity of the target", _perplexity),
    "reference": Metric("log perplexity of the reference ÷ log perplexity of the target",
                        _reference, "reference"),
    "zlib": Metric("zlib entropy (bits) ÷ log perplexity of the target", _zlib),
    "lowercase": Metric("log perplexity of the lowercased text ÷ log perplexity of the target",
                        _lowercase, "lowercase"),
    "window": Metric("−log of the minimum perplexity over a sliding window", _window),
}


def available(*, reference: bool, lowercase: bool = True) -> list[str]:
    """The metrics that can be computed with (or without) a reference model / lowercased text."""
    have = {"reference": reference, "lowercase": lowercase}
    return [name for name, m in METRICS.items() if m.needs is None or have[m.needs]]


def metric_scores(target: np.ndarray, text: str, *, window: int,
                  reference: np.ndarray | None = None,
                  lowercase: np.ndarray | None = None) -> dict[str, float]:
    """The membership scores of one sample (higher: more likely memorised); a metric whose
    input (``reference``, ``lowercase``) is None is left out."""
    sample = Sample(text, target, window, reference, lowercase)
    names = available(reference=reference is not None, lowercase=lowercase is not None)
    return {name: METRICS[name].function(sample) for name in names}


def trigrams(text: str) -> Counter:
    """The multiset of word trigrams of ``text`` (the words themselves when fewer than 3)."""
    words = text.split()
    if len(words) < 3:
        return Counter([tuple(words)])
    return Counter(zip(words, words[1:], words[2:]))


def is_near_duplicate(candidate: Counter, kept: Counter) -> bool:
    """|tri(s) ∩ tri(s')| ≥ |tri(s)| / 2 (Carlini et al. §5.3)."""
    return sum((candidate & kept).values()) * 2 >= sum(candidate.values())


def top_k_deduplicated(order: list[int], grams: list[Counter] | dict[int, Counter], k: int,
                       dedup: bool = True) -> list[int]:
    """The first ``k`` of ``order`` that are not near-duplicates of an earlier kept one."""
    kept: list[int] = []
    for i in order:
        if len(kept) == k:
            break
        if not dedup or not any(is_near_duplicate(grams[i], grams[j]) for j in kept):
            kept.append(i)
    return kept
