"""Memorisation in bits: (l, b)-inextractability (Liu, Evans & Xiong, "Beyond
Indistinguishability: Measuring Extraction Risk in LLM APIs", IEEE S&P 2026) and probabilistic
discoverable extraction (Hayes et al., NAACL 2025), beside the DP bound of the training run.

One scoring pass gives, at every token z_t of a text, its log-probability p_t, its rank r_t
under the model (1: the greedy choice) and its density under the user's sampling scheme. An
attacker who tries the model's m most likely tokens in order pays log2 r_t bits for a token of
rank r_t ≤ m, and −log2 p_t otherwise (the paper's Algorithm 2), so an l-token window z costs

    b(z) = Σ_t [log2 r_t if r_t ≤ m else −log2 p_t]   bits,  i.e. p_z = 2^−b(z),

and a set of texts is (l, b)-inextractable for b = min_z b(z) over all their windows. The
greedy-extractable fraction is the share of windows whose every token has rank 1 (Algorithm 3).
Tokens are scored from the end-of-text context token, so a text's first token counts too.
Each prefix/suffix pair gets b of its whole suffix and p_z under the sampling scheme
(``core.attacks.inextractability.probabilistic``). With a training run's σ, q and steps, the result
gives the Bound Explorer's L(p0) for a secret of b bits (p0 = 2^−b; Stock et al. 2022).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time

import numpy as np

from core.attacks.inextractability.audit_hooks import AUDIT
from core.attacks.inextractability.config import (InextractabilityConfig,
                                                  InextractabilityResult,
                                                  PairBits, RecordBits)
from core.attacks.inextractability.prior import with_prior
from core.attacks.inextractability.probabilistic import (LN2, ProbabilisticExtraction,
                                                         from_arrays, samples_needed,
                                                         suffix_arrays)
from core import chat
from core.bounds import training_run
from core.calibration.public import load_public, marked_and_arranged
from core.readers.data import read_texts
from core.errors import UserError
from core.models import resolve_model
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import Rank, Sampler, score_under_samplers
from core.specs import AttackSpec
from core.attacks.inextractability import cost as attack_cost

HISTOGRAM_BINS = 40


def token_bits(ranks: np.ndarray, logprobs: np.ndarray, m: int) -> np.ndarray:
    """Each token's cost in bits: log2 r for rank r ≤ m, else −log2 p (natural ``logprobs``)."""
    ranks = np.asarray(ranks, dtype=np.float64)
    return np.where(ranks <= m, np.log2(ranks), -np.asarray(logprobs, dtype=np.float64) / LN2)


def window_sums(values: np.ndarray, l: int) -> np.ndarray:
    """The sum of every l consecutive values (none when fewer than l)."""
    if len(values) < l:
        return np.zeros(0)
    return np.lib.stride_tricks.sliding_window_view(values, l).sum(axis=1)


def window_bits(ranks: np.ndarray, logprobs: np.ndarray, l: int, m: int) -> np.ndarray:
    """b(z) of every l-token window z of one text (Algorithm 2's inner loop)."""
    return window_sums(token_bits(ranks, logprobs, m), l)


def greedy_windows(ranks: np.ndarray, l: int, valid: np.ndarray | None = None) -> int:
    """How many l-token windows (of those ``valid``) have rank 1 at every token (Algorithm 3)."""
    if len(ranks) < l:
        return 0
    greedy = np.lib.stride_tricks.sliding_window_view(np.asarray(ranks) == 1, l).all(axis=1)
    return int((greedy if valid is None else greedy & valid).sum())


def measured_texts(config: InextractabilityConfig) -> list[str]:
    """The corpus's texts, then the ``--text`` ones."""
    texts = (read_texts(config.corpus) if config.corpus.strip() else []) + list(config.texts)
    if any(not t.strip() for t in config.texts):
        raise UserError("a text to measure (--text) is blank: give its words")
    return texts


def _record(lm, i: int, scores: tuple, config: InextractabilityConfig,
            bits: np.ndarray, valid: np.ndarray) -> RecordBits:
    """The easiest ``valid`` window of text ``i`` (its b, p_z under the sampler, greedy share)."""
    own, ranks, sampled = scores
    start = int(np.flatnonzero(valid)[np.argmin(bits[valid])])
    log_p = float(window_sums(sampled.logprobs.astype(np.float64), config.window)[start])
    ids = own.token_ids[own.first_scored:][start:start + config.window]
    return RecordBits(record=i, text=lm.tokenizer.decode(ids.tolist()), start=start,
                      b=float(bits[start]), log2_p=log_p / LN2,
                      samples_50=samples_needed(log_p, config.probability),
                      greedy_windows=greedy_windows(ranks.logprobs, config.window, valid),
                      windows=int(valid.sum()))


def _sequences(lm, texts: list[str], rendered) -> list[tuple[list, list, bool]]:
    """(token ids, trained masks or None, add_bos) of the rendered rows, then the plain texts."""
    plain = lm.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    return [([list(r.ids) for r in rendered], [r.trained for r in rendered], False),
            (plain, [None] * len(plain), True)]


def measure_texts(lm, texts: list[str], config: InextractabilityConfig, progress: Progress,
                  cancel: threading.Event | None, rendered=()) -> tuple[list[RecordBits], np.ndarray]:
    """Every text's easiest window, and every window's b (texts shorter than l: none). A
    rendered row (``core.chat``) first, its windows only those wholly of trained tokens, the
    rest of the row being context; then the plain ``texts``, every window."""
    records, every, longest, number = [], [], 0, 0
    for ids, masks, add_bos in _sequences(lm, texts, rendered):
        scored = score_under_samplers(lm, ids, [None, Rank(), config.sampler], add_bos=add_bos,
                                      batch_size=config.batch_size, progress=progress,
                                      cancel=cancel) if ids else [[], [], []]
        for scores, trained in zip(zip(*scored), masks):
            bits = window_bits(scores[1].logprobs, scores[0].logprobs, config.window,
                               config.rank_threshold)
            counted = (np.ones(len(scores[0].logprobs)) if trained is None
                       else trained[scores[0].first_scored:].astype(np.float64))
            valid = window_sums(counted, config.window) == config.window
            longest = max(longest, int(counted.sum()))
            if valid.any():
                records.append(_record(lm, number, scores, config, bits, valid))
                every.append(bits[valid])
            number += 1
    if number and not records:
        raise UserError(f"no text has a window of {config.window} tokens (the longest has "
                        f"{longest}): choose a smaller window (--window)")
    return records, np.concatenate(every) if every else np.zeros(0)


def easiest(records: list[RecordBits]) -> list[RecordBits]:
    """The distinct easiest windows, by b then by p_z (most likely first); a window
    that is the easiest of several texts (copies of one record) is listed once, counted."""
    distinct: dict[str, RecordBits] = {}
    for record in sorted(records, key=lambda r: (r.b, -r.log2_p)):
        if record.text in distinct:
            distinct[record.text].copies += 1
        else:
            distinct[record.text] = dataclasses.replace(record, copies=1)
    return list(distinct.values())


def pair_measures(lm, pairs: list[tuple[str, str]], sampler: Sampler, *, rank_threshold: int,
                  probability: float = 0.5, batch_size: int | None = None,
                  add_bos: bool = True, cancel: threading.Event | None = None
                  ) -> list[tuple[ProbabilisticExtraction, float]]:
    """Each (prefix, suffix) pair's p_z under ``sampler`` and the samples n it needs (Hayes et
    al.), with b of its whole suffix (rank-aware, m = ``rank_threshold``; Liu et al.): one
    scoring pass over the pairs (after the context token unless not ``add_bos``: a chat
    prompt holds its own start). Extraction's results call it too."""
    prefixes, suffixes = [p for p, _ in pairs], [s for _, s in pairs]
    arrays = suffix_arrays(lm, prefixes, suffixes, sampler, batch_size=batch_size,
                           add_bos=add_bos, cancel=cancel)
    return [(from_arrays(prefix, suffix, own, ranks, sampled, probability),
             float(token_bits(ranks, own, rank_threshold).sum()))
            for prefix, suffix, (own, ranks, sampled) in zip(prefixes, suffixes, arrays)]


def measure_pairs(lm, config: InextractabilityConfig,
                  cancel: threading.Event | None = None) -> list[PairBits]:
    """b of each whole suffix after its prefix, and its p_z under the sampling scheme."""
    measured = pair_measures(lm, config.pairs, config.sampler,
                             rank_threshold=config.rank_threshold,
                             probability=config.probability, batch_size=config.batch_size,
                             cancel=cancel)
    return [PairBits(**vars(found), b=b, dp_bound_bits=_bound(config, b))
            for found, b in measured]


def _bound(config: InextractabilityConfig, b: float) -> float | None:
    return training_run.leakage_bits(config.sigma, config.q, config.steps, b)


def dp_note(config: InextractabilityConfig) -> str:
    if not config.sigma:
        return ("no DP-SGD run given (σ = 0): nothing bounds the leak; a b-bit secret may "
                "leak whole (give --sigma, --q, --steps for L(p0))")
    return (f"L(p0): the most any attack can learn of a secret of b bits under DP-SGD with "
            f"σ = {config.sigma:g}, q = {config.q:g}, {config.steps:,} steps (δ = 1e-5)")


def run(config: InextractabilityConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> InextractabilityResult:
    """Score the texts and the pairs once; each text's easiest window, the corpus's b and
    greedy fraction, each pair's b and p_z, and L(p0) beside them. See the module doc."""
    started = time.perf_counter()
    check_cancel(cancel)
    public, notes = load_public(config), []
    texts = measured_texts(config)
    lm = resolve_model(config.model, device=config.device)
    rendered = (chat.source_sequences(config.corpus, lm, mask=config.mask,
                                      template=config.chat_template)
                if config.corpus.strip() else None)
    if rendered is not None:
        texts = list(config.texts)
    progress(0.05, f"scoring {len(texts) + len(rendered or ()):,} texts")
    records, every = measure_texts(lm, texts, config, lambda f, m="": progress(0.05 + 0.85 * f, m),
                                   cancel, rendered or ())
    texts += [r.text for r in rendered or ()]
    check_cancel(cancel)
    pairs = measure_pairs(lm, config, cancel) if config.pairs else []
    if pairs and config.reference.strip():
        with_prior(pairs, lm, config, cancel)
    worst = min(records, key=lambda r: (r.b, -r.log2_p)) if records else None
    greedy, windows = sum(r.greedy_windows for r in records), sum(r.windows for r in records)
    finite = every[np.isfinite(every)]
    counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS) if len(finite) else ([], [])
    return InextractabilityResult(
        model=config.model, window=config.window, rank_threshold=config.rank_threshold,
        sampler=config.describe_sampler(), probability=config.probability,
        b=worst.b if worst else None, worst=worst,
        greedy_fraction=greedy / windows if windows else None, greedy_windows=greedy,
        windows=windows, texts=len(texts), skipped=len(texts) - len(records),
        records=marked_and_arranged(easiest(records), public, config.public_rows,
                                    text=lambda r: r.text, notes=notes,
                                    what="easiest windows")[:config.top], pairs=pairs,
        histogram_edges=list(map(float, edges)), histogram_counts=list(map(int, counts)),
        dp_bound_bits=_bound(config, worst.b) if worst else None, dp_note=dp_note(config),
        seconds=time.perf_counter() - started, notes=notes)


TINY_TEXTS = ("the cat sat on the mat and the dog sat on the log",
              "my pin is 4242 and my code is 1717", "to be or not to be that is the question")


def tiny_config() -> InextractabilityConfig:
    """A one-layer random GPT-2 on three short texts, a 4-token window and one pair (seconds)."""
    from core.models.tiny import tiny_random_models

    model, = tiny_random_models(list(TINY_TEXTS) * 4, ("tiny-inextractability",), vocab_size=280)
    return InextractabilityConfig(model=model, texts=TINY_TEXTS, window=4, prefixes=("my pin is",),
                                  suffixes=(" 4242",), batch_size=8, device="cpu")


def headline(result: InextractabilityResult) -> dict[str, float]:
    """b (bits), the greedy-extractable fraction and each pair's b."""
    numbers = {"b": result.b, "greedy_fraction": result.greedy_fraction,
               "dp_bound_bits": result.dp_bound_bits}
    numbers |= {f"b_pair_{i}": p.b for i, p in enumerate(result.pairs)}
    return {k: v for k, v in numbers.items() if v is not None and math.isfinite(v)}


SPEC = AttackSpec(
    name="inextractability",
    title="Memorisation in bits: (l, b)-inextractability and probabilistic extraction",
    config_type=InextractabilityConfig,
    result_type=InextractabilityResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: f"inextractability (l = {c.window}, m = {c.rank_threshold}) under {c.model}",
    table="records",
    audit=AUDIT,
    cost=attack_cost.inextractability,
)
