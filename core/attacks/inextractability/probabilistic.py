"""Probabilistic discoverable extraction (Hayes et al., "Measuring memorization in language
models via probabilistic extraction", NAACL 2025).

For a prefix x and a target suffix z = z_1..z_s, the probability that one sample of the user's
sampling scheme g (temperature, top-k, top-p, each renormalised) reproduces z verbatim is

    p_z = Π_t g(z_t | x, z_<t),

and z is (n, p)-discoverably extractable when 1 − (1 − p_z)^n ≥ p: found at least once in n
independent samples with probability p. ``samples_needed`` gives the least such n (p = 0.5 by
default: the "1 in n" a greedy yes/no cannot state). The densities come from the scoring
engine's ``Sampler`` (one forward pass gives the plain log-probabilities, the ranks and the
sampler's density at once).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from core.errors import UserError
from core.scoring import Rank, Sampler, score_under_samplers

LN2 = math.log(2)
RANK_THRESHOLD = 20   # the paper's m (Liu, Evans & Xiong 2026): the default of b everywhere


def samples_needed(log_p: float, probability: float = 0.5) -> float:
    """The least n with 1 − (1 − p_z)^n ≥ ``probability`` for p_z = exp(``log_p``): ⌈log(1 −
    probability) / log(1 − p_z)⌉ (1 when p_z = 1, inf when p_z = 0)."""
    if not 0 < probability < 1:
        raise UserError(f"the target probability must be above 0 and below 1, not {probability}")
    if log_p >= 0:
        return 1.0
    if log_p == -math.inf:
        return math.inf
    if log_p < -30:   # p_z < 1e-13: n = ln(1/(1 − probability))/p_z to 1e-13 (not rounded)
        return -math.log1p(-probability) * math.exp(-log_p) if log_p > -709 else math.inf
    n = math.ceil(math.log1p(-probability) / log1mexp(log_p))
    while n > 1 and discovery_probability(log_p, n - 1) >= probability:
        n -= 1   # the ceiling of a rounded ratio may overshoot by one
    return float(max(n, 1))


def log1mexp(log_p: float) -> float:
    """log(1 − e^log_p) for log_p < 0, without cancellation at either end (Mächler 2012)."""
    return math.log(-math.expm1(log_p)) if log_p > -LN2 else math.log1p(-math.exp(log_p))


def discovery_probability(log_p: float, n: int) -> float:
    """1 − (1 − p_z)^n: the chance that n samples reproduce the suffix at least once."""
    if log_p >= 0:
        return 1.0
    return 0.0 if log_p == -math.inf else -math.expm1(n * log1mexp(log_p))


@dataclass
class ProbabilisticExtraction:
    """One prefix/suffix pair: its suffix's probability under the sampling scheme and the
    samples an attacker needs; ``log2_p_model`` and ``max_rank`` are the model's own."""

    prefix: str
    suffix: str
    suffix_tokens: int
    log2_p: float          # log2 p_z under the sampling scheme (−inf: outside its support)
    samples_50: float      # least n with P(found in n samples) ≥ the target probability
    log2_p_model: float    # log2 of the suffix's probability under the model itself
    max_rank: int          # the suffix token's worst rank (1 everywhere: greedy-extractable)


def pair_ids(lm, prefixes: list[str], suffixes: list[str]) -> tuple[list[list[int]], list[int]]:
    """Each pair as prefix tokens + suffix tokens (tokenised apart, as Hayes et al. do), and
    each suffix's length; a ``UserError`` for an empty suffix."""
    if len(prefixes) != len(suffixes):
        raise UserError(f"give one prefix per suffix ({len(prefixes)} prefixes, "
                        f"{len(suffixes)} suffixes)")
    tok = lm.tokenizer
    pre = tok(list(prefixes), add_special_tokens=False)["input_ids"] if prefixes else []
    suf = tok(list(suffixes), add_special_tokens=False)["input_ids"] if suffixes else []
    for text, ids in zip(suffixes, suf):
        if not ids:
            raise UserError(f"suffix {text!r} has no tokens: give a non-empty suffix")
    return [p + s for p, s in zip(pre, suf)], [len(s) for s in suf]


def suffix_arrays(lm, prefixes: list[str], suffixes: list[str], sampler: Sampler, *,
                  batch_size: int | None = None, progress=None, add_bos: bool = True,
                  cancel: threading.Event | None = None) -> list[tuple[np.ndarray, ...]]:
    """(model log-probs, ranks, sampler log-probs) of each pair's suffix tokens, one pass."""
    ids, lengths = pair_ids(lm, prefixes, suffixes)
    return suffix_arrays_of_ids(lm, ids, lengths, sampler, batch_size=batch_size,
                                progress=progress, add_bos=add_bos, cancel=cancel)


def suffix_arrays_of_ids(lm, ids: list[list[int]], lengths: list[int], sampler: Sampler, *,
                         batch_size: int | None = None, progress=None, add_bos: bool = True,
                         cancel: threading.Event | None = None) -> list[tuple[np.ndarray, ...]]:
    """``suffix_arrays`` of token-id sequences whose last ``lengths[i]`` tokens are the suffix."""
    own, ranks, sampled = score_under_samplers(lm, ids, [None, Rank(), sampler],
                                               add_bos=add_bos, batch_size=batch_size,
                                               progress=progress, cancel=cancel)
    return [(o.logprobs[-n:].astype(np.float64), r.logprobs[-n:].astype(np.int64),
             s.logprobs[-n:].astype(np.float64))
            for o, r, s, n in zip(own, ranks, sampled, lengths)]


def from_arrays(prefix: str, suffix: str, own: np.ndarray, ranks: np.ndarray,
                sampled: np.ndarray, probability: float = 0.5) -> ProbabilisticExtraction:
    """One pair's result from its suffix tokens' log-probs, ranks and sampler log-probs."""
    log_p = float(sampled.sum())
    return ProbabilisticExtraction(
        prefix=prefix, suffix=suffix, suffix_tokens=len(own), log2_p=log_p / LN2,
        samples_50=samples_needed(log_p, probability), log2_p_model=float(own.sum()) / LN2,
        max_rank=int(ranks.max()))


def extraction_probability(lm, prefixes: list[str], suffixes: list[str],
                           sampler: Sampler | None = None, *, probability: float = 0.5,
                           **options) -> list[ProbabilisticExtraction]:
    """p_z and the samples needed for each prefix/suffix pair under ``sampler`` (None: the
    model's own distribution, temperature 1). Options go to the scoring engine."""
    arrays = suffix_arrays(lm, prefixes, suffixes, sampler or Sampler(), **options)
    return [from_arrays(p, s, *a, probability) for p, s, a in zip(prefixes, suffixes, arrays)]
