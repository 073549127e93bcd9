"""How extractable what an extraction run found is, in samples and in bits: each distinct
memorised span after the text before it in its candidate, and each tracked phrase (a planted
secret, a canary) from the start of a sample, under the sampling scheme of the strategy that
produced it (``ExtractionConfig.sampler``):

    p_z = Π_t g(z_t | x, z_<t),   n = min{n : 1 − (1 − p_z)^n ≥ 0.5}   (Hayes et al., NAACL 2025),
    b = Σ_t [log2 r_t if r_t ≤ m else −log2 p_t]   bits   (Liu, Evans & Xiong, IEEE S&P 2026),

from one scoring pass over the pairs of each sampling scheme, by the code of the
``inextractability`` command (``core.attacks.inextractability.spec.pair_measures``).
"""

from __future__ import annotations

import threading

from core.attacks.extraction.config import (Candidate, Extractability, ExtractionConfig,
                                            ExtractionResult)
from core.attacks.extraction.chat import ChatTurn, reply_measures
from core.attacks.inextractability.spec import pair_measures
from core.models import LoadedModel
from core.runtime import Cancelled

PROBABILITY = 0.5   # n: the fewest samples that find the span with this probability


def memorised_pairs(result: ExtractionResult) -> tuple[list[tuple[Candidate, str, str]], int]:
    """Each memorised passage once (longest span first, none a part of one already kept, as
    the verdict names them) with the candidate holding it, as (candidate, its text before the
    span, the span); and how many were not found in their candidate's text (a decoding that
    differs)."""
    seen: list[str] = []
    pairs, missing = [], 0
    for c in sorted((c for c in result.candidates if c.memorized and c.span),
                    key=lambda c: (-c.span_tokens, -c.k_eidetic)):
        span = " ".join(c.span.split())
        if any(span in kept for kept in seen):
            continue
        seen.append(span)
        start = c.text.find(c.span)
        if start < 0:
            missing += 1
        else:
            pairs.append((c, c.text[:start], c.span))
    return pairs, missing


def scheme(config: ExtractionConfig) -> str:
    """What p_z and b are under, in words."""
    samplers = "; ".join(f"{s}: {config.describe_sampler(s)}" for s in config.strategies)
    return (f"p_z under the sampling of the strategy that found it ({samplers}); n: samples "
            f"for P ≥ {PROBABILITY:g}; b with m = {config.rank_threshold}. A memorised span "
            "after its sample's text before it; a tracked phrase from the start of a sample.")


def _jobs(config: ExtractionConfig, result: ExtractionResult
          ) -> dict[str, list[tuple[str, str, int | None]]]:
    """Strategy -> its pairs (prefix, suffix, candidate id or None for a tracked phrase)."""
    pairs, missing = memorised_pairs(result)
    if missing:
        result.notes.append(f"{missing} memorised span(s) not found verbatim in their sample's "
                            "decoded text: no p_z or b for them")
    jobs: dict[str, list[tuple[str, str, int | None]]] = {}
    for c, prefix, span in pairs:   # a chat reply's span: after its prompt too
        jobs.setdefault(c.strategy, []).append((c.prompt + prefix, span, c.id))
    # a phrase from the start of a sample: once per distinct sampling scheme (the prefix and
    # chat strategies' samples start after a document's words or a prompt, so not from them)
    unprompted = [s for s in config.strategies if s not in ("prefix", "chat")] or ["top-n"]
    schemes: dict[str, str] = {}
    for strategy in unprompted:
        schemes.setdefault(repr(config.sampler(strategy)), strategy)
    for phrase in config.track:
        for strategy in schemes.values():
            jobs.setdefault(strategy, []).append(("", phrase, None))
    return jobs


def measure(config: ExtractionConfig, result: ExtractionResult, target: LoadedModel,
            cancel: threading.Event | None = None) -> None:
    """Set ``result.extractability`` (memorised spans first, then tracked phrases) and its
    scheme. A cancel leaves them out and the result stopped early."""
    found = []
    try:
        for strategy, pairs in _jobs(config, result).items():
            measured = pair_measures(target, [(p, s) for p, s, _ in pairs],
                                     config.sampler(strategy),
                                     rank_threshold=config.rank_threshold,
                                     probability=PROBABILITY, batch_size=config.batch_size,
                                     add_bos=strategy != "chat", cancel=cancel)
            found += [Extractability(**vars(m), b=b, strategy=strategy, candidate=i)
                      for (m, b), (_, _, i) in zip(measured, pairs)]
    except Cancelled:
        result.stopped_early = True
        result.notes.append("stopped before p_z and b of the memorised spans")
        return
    result.extractability = sorted(found, key=lambda e: e.candidate is None)
    result.extractability_scheme = scheme(config)


def measure_replies(config: ExtractionConfig, result: ExtractionResult, target: LoadedModel,
                    turns: list[ChatTurn], cancel: threading.Event | None = None) -> None:
    """Set ``result.replies``: p_z, n and b of each trained reply given its prompt under the
    chat strategy's sampling, most extractable first. A cancel leaves them out."""
    try:
        measured = reply_measures(target, turns, config.sampler("chat"),
                                  rank_threshold=config.rank_threshold, probability=PROBABILITY,
                                  batch_size=config.batch_size, cancel=cancel)
    except Cancelled:
        result.stopped_early = True
        result.notes.append("stopped before p_z and b of the trained replies")
        return
    result.replies = sorted((Extractability(**vars(m), b=b, strategy="chat") for m, b in measured),
                            key=lambda e: -e.log2_p)
    if len(measured) < sum(1 for t in turns if t.reply_ids):
        result.notes.append(f"p_z of the first {len(measured):,} trained replies only")
