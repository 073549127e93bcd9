"""The sequence-level membership scores of the membership-inference suite, each from per-token
arrays the scoring engine returns in one forward pass per model (higher: more likely a member).

For a text x = x_1..x_n, ℓ_i = log p(x_i | x_<i) under the target model:

* ``loss`` (Yeom et al. 2018): (1/n) Σ ℓ_i, i.e. minus the loss.
* ``ref`` (Carlini et al. 2021, §5.2): log ppl_reference / log ppl_target, the reference a model
  not trained on the data (e.g. the model before fine-tuning).
* ``zlib`` (Carlini et al. 2021): zlib entropy of the text (bits) / log ppl_target.
* ``lowercase`` (Carlini et al. 2021): log ppl_target(lowercased text) / log ppl_target.
* ``mink`` (Shi et al. 2024, "Detecting Pretraining Data from LLMs", Min-K% Prob): the mean of
  the k% lowest ℓ_i.
* ``minkpp`` (Zhang et al. 2024, "Min-K%++", Eq. 3): the mean of the k% lowest
  (ℓ_i − μ_i) / σ_i, with μ_i and σ_i² the mean and variance of log p(z | x_<i) for z drawn from
  the model's own next-token distribution.
* ``recall`` (Xie et al. 2024, "ReCaLL", Eq. 1): LL(x | P) / LL(x), the average log-likelihood of
  x after a non-member prefix P over the one without; conditioning on non-member text lowers a
  member's likelihood more, so the ratio is larger for members.
* ``dcpdd`` (Zhang et al. 2024, "Pretraining Data Detection for LLMs: A Divergence-based
  Calibration Method", §3.3-3.4): α_i = min(−p(x_i | x_<i) · log f(x_i), a) with f the token's
  Laplace-smoothed frequency in a reference corpus, averaged over each token's first occurrence.
* ``ezmia`` (Ilić, Stanojević & Cvejoski 2026, "Powerful Training-Free Membership Inference
  Against Autoregressive Language Models", the Error Zone score): over the error zone E, the
  tokens whose target rank is above 1 (the target's top-1 token is not x_i; the first scored
  token, predicted from no text, left out as the authors' code does), with
  Δ_i = ℓ_i − ℓ_i^ref against the reference (the base model),
  EZ = Σ_{i∈E, Δ_i>0} Δ_i / Σ_{i∈E, Δ_i<0} |Δ_i|; 0 when E has fewer than 2 tokens or no Δ_i
  is negative (the authors' code, github.com/JetBrains-Research/ez-mia).

The first four reuse ``core.generation.metrics`` (the extraction attack's metrics).

Scored as MIMIR does (``ScoreSettings.mimir``; Duan et al. 2024, github.com/iamgroot42/mimir), for
numbers comparable with published ones: with a tokenizer that adds no BOS (GPT-2 style) a text's
first token is context only (tokens 2..n are scored, with no context token before them:
``core.attacks.membership.scoring``), and Min-K% / Min-K%++ average the
⌊k·n⌋ lowest values (MIMIR's ``sorted(...)[:int(n * k)]``; none: no score) instead of ⌈k·n⌉.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from core.generation.metrics import METRICS, Sample

DCPDD_CAP = 0.01   # the paper's upper bound a on one token's α_i


@dataclass(frozen=True)
class TextArrays:
    """What the scores read of one text: the target's per-token log-probabilities and moments,
    and (when computed) the reference's, the lowercased text's and the prefixed text's."""

    text: str
    token_ids: np.ndarray
    target: np.ndarray
    mean: np.ndarray | None = None        # μ_i, for min-k%++
    variance: np.ndarray | None = None    # σ_i², for min-k%++
    reference: np.ndarray | None = None
    lowercase: np.ndarray | None = None
    prefixed: np.ndarray | None = None    # ℓ_i of the same tokens after the ReCaLL prefix
    ranks: np.ndarray | None = None       # the target's rank of x_i (1: its top-1), for EZ-MIA


def lowest_fraction_mean(values: np.ndarray, fraction: float, floor: bool = False) -> float:
    """The mean of the ⌈fraction · n⌉ lowest values (at least one); with ``floor`` of the
    ⌊fraction · n⌋ lowest (MIMIR's count: nan when that is none)."""
    values = np.asarray(values, dtype=np.float64)
    count = int(fraction * len(values)) if floor else max(1, math.ceil(fraction * len(values)))
    if count == 0:
        return math.nan
    return float(np.mean(np.partition(values, count - 1)[:count]))


def min_k(arrays: TextArrays, k: float, floor: bool = False) -> float:
    return lowest_fraction_mean(arrays.target, k, floor)


def min_k_plus_plus(arrays: TextArrays, k: float, floor: bool = False) -> float:
    std = np.sqrt(np.maximum(np.asarray(arrays.variance, dtype=np.float64), 1e-12))
    return lowest_fraction_mean((arrays.target - arrays.mean) / std, k, floor)


def recall_ratio(arrays: TextArrays) -> float:
    """LL(x | P) / LL(x) with LL the mean log-likelihood per token."""
    return float(np.mean(arrays.prefixed, dtype=np.float64)
                 / min(np.mean(arrays.target, dtype=np.float64), -1e-12))


def log_token_frequencies(corpus_ids: list[np.ndarray], vocab_size: int) -> np.ndarray:
    """log f(z) = log (count(z) + 1) / (N + |V|): Laplace-smoothed token frequencies of a
    reference corpus (DC-PDD §3.3)."""
    counts = np.zeros(vocab_size, dtype=np.float64)
    for ids in corpus_ids:
        counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size)[:vocab_size]
    return np.log(counts + 1) - math.log(counts.sum() + vocab_size)


def dc_pdd(arrays: TextArrays, log_frequency: np.ndarray, cap: float = DCPDD_CAP) -> float:
    """The mean over first occurrences of min(−p(x_i | x_<i) · log f(x_i), cap)."""
    ids = arrays.token_ids[len(arrays.token_ids) - len(arrays.target):]
    _, first = np.unique(ids, return_index=True)
    alpha = -np.exp(arrays.target[first].astype(np.float64)) * log_frequency[ids[first]]
    return float(np.mean(np.minimum(alpha, cap)))


def error_zone(arrays: TextArrays, min_tokens: int = 2) -> float:
    """The EZ score: positive over negative target − reference shifts where the target's top-1
    token is wrong (see the module doc)."""
    zone = np.asarray(arrays.ranks)[1:] > 1
    if zone.sum() < min_tokens:
        return 0.0
    deltas = (np.asarray(arrays.target, dtype=np.float64)
              - np.asarray(arrays.reference, dtype=np.float64))[1:][zone]
    negative = -deltas[deltas < 0].sum()
    return float(deltas[deltas > 0].sum() / negative) if negative > 0 else 0.0


def _carlini(name: str) -> Callable[[TextArrays, "ScoreSettings"], float]:
    """One of the extraction attack's metrics, read from the same arrays."""
    def score(arrays: TextArrays, settings: ScoreSettings) -> float:
        sample = Sample(arrays.text, arrays.target, reference=arrays.reference,
                        lowercase=arrays.lowercase)
        return METRICS[name].function(sample)
    return score


@dataclass(frozen=True)
class ScoreSettings:
    k: float = 0.2                              # min-k% and min-k%++
    log_frequency: np.ndarray | None = None     # DC-PDD
    dcpdd_cap: float = DCPDD_CAP
    mimir: bool = False                         # Min-K% counts as MIMIR: ⌊k·n⌋
    first_is_context: bool = False              # MIMIR, no BOS: tokens 2..n, no context token


# What an attack may need beyond the target's log-probabilities (a key here, a field of
# ``TextArrays`` the scoring pass fills), with what the user gives for it.
NEEDS = {"reference": "a reference model (--reference)",
         "lowercase": "nothing more (the lowercased text is scored too)",
         "prefixed": "a prefix (--recall-prefix) or recall shots > 0",
         "frequency": "a frequency corpus (--frequency-corpus)"}


class Attack(NamedTuple):
    """One membership score: its title, its paper, the function of one text's arrays, and what
    it needs (a key of ``NEEDS``; None: the target's log-probabilities only)."""

    title: str
    citation: str
    score: Callable[[TextArrays, ScoreSettings], float]
    needs: str | None = None


ATTACKS: dict[str, Attack] = {
    "loss": Attack("Loss", "Yeom et al. 2018", _carlini("perplexity")),
    "ref": Attack("Reference ratio", "Carlini et al. 2021", _carlini("reference"), "reference"),
    "zlib": Attack("zlib ratio", "Carlini et al. 2021", _carlini("zlib")),
    "lowercase": Attack("Lowercase ratio", "Carlini et al. 2021", _carlini("lowercase"),
                        "lowercase"),
    "mink": Attack("Min-K%", "Shi et al. 2024", lambda a, s: min_k(a, s.k, s.mimir)),
    "minkpp": Attack("Min-K%++", "Zhang et al. 2024",
                     lambda a, s: min_k_plus_plus(a, s.k, s.mimir)),
    "recall": Attack("ReCaLL", "Xie et al. 2024", lambda a, s: recall_ratio(a), "prefixed"),
    "dcpdd": Attack("DC-PDD", "Zhang et al. 2024 (EMNLP)",
                    lambda a, s: dc_pdd(a, s.log_frequency, s.dcpdd_cap), "frequency"),
    "ezmia": Attack("EZ-MIA", "Ilić et al. 2026", lambda a, s: error_zone(a), "reference"),
}

REWRITING = ("lowercase", "recall")   # they score a rewritten text: not of a rendered row


def text_scores(arrays: TextArrays, names: list[str], settings: ScoreSettings) -> dict[str, float]:
    """Each named attack's score of one text."""
    return {name: ATTACKS[name].score(arrays, settings) for name in names}
