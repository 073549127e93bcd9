"""Training-data extraction from a language model (Carlini et al., USENIX Security 2021).

**Generate** many samples from the target model (``core.generation.sampling``), each one
document started from the end-of-text context token and stopped at the next one (or after
``tokens`` tokens):

* ``top-n``: top-n sampling, n = 40, 256 tokens;
* ``temperature``: a decaying temperature, β from 10 down to 1 over the first 20 tokens, then 1
  (explore diverse prefixes, then follow confident paths);
* ``prefix``: top-n sampling after the first 5-10 tokens of a random document of a text file
  (the paper's "Internet" prefixes).

**Rank** them by the membership metrics of ``core.generation.metrics`` (each sample
scored once per model by the scoring engine; given a public in-domain sample, the reference
model is its domain reference, ``core.calibration.domain``), drop near-duplicates while reading a
ranking and keep the top-k of each (strategy × metric). With a training corpus the candidates
are **verified** (``core.attacks.extraction.verification``): memorised when they hold a verbatim span of
at least ``min_span_tokens`` tokens of a corpus document, with their k-eidetic count, and each
ranking gets its precision (the paper's Table 3). Each distinct memorised span and each tracked
phrase then gets p_z under its strategy's sampling, the samples n it needs and b in bits
(``core.attacks.extraction.extractability``). A cancel stops generation or scoring at its
next batch; the strategies scored before it are kept.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

import numpy as np

from core import paths
from core.attacks.extraction import extractability
from core.attacks.extraction.audit_hooks import AUDIT
from core.attacks.extraction.config import (SAME_TOKENS, Candidate, ExtractionConfig,
                                            ExtractionResult)
from core.attacks.extraction.verification import CorpusIndex, precision_table
from core.attacks.extraction.views import headline, phrase_hits
from core.calibration.domain import calibrate_run, describe_calibration
from core.data import read_texts
from core.generation.metrics import (available, metric_scores, min_window_log_perplexity,
                                     top_k_deduplicated, trigrams, zlib_bits)
from core.generation.sampling import Generated, SampleLog, generate, prefix_prompts
from core.models import LoadedModel, resolve_model
from core.models.compat import check_same_vocabulary
from core.models.tiny import tiny_random_models
from core.runtime import Cancelled, Progress, check_cancel, no_progress, share
from core.scoring import context_ids, score_texts, score_token_ids
from core.serialize import to_jsonable
from core.specs import AttackSpec


def _models(config: ExtractionConfig, reference: str) -> tuple[LoadedModel, LoadedModel | None]:
    """The target and the model ``reference`` names (none when empty)."""
    target = resolve_model(config.model, device=config.device)
    if not reference:
        return target, None
    reference = resolve_model(reference, device=config.device)
    check_same_vocabulary(target, reference, why=SAME_TOKENS)
    return target, reference


def _score(config: ExtractionConfig, strategy: str, gen: Generated, target: LoadedModel,
           reference: LoadedModel | None, first_id: int, progress: Progress,
           cancel: threading.Event | None) -> list[tuple[Candidate, np.ndarray]]:
    """Score the samples of one strategy once under each model: (candidate, its token ids).
    ``Cancelled`` when ``cancel`` is set, at the next batch of a pass."""
    texts = [target.tokenizer.decode(s.tolist()) for s in gen.samples]
    keep = [i for i, t in enumerate(texts) if len(gen.samples[i]) and t.strip()]
    samples, texts = [gen.samples[i] for i in keep], [texts[i] for i in keep]
    scored = score_token_ids(target, samples, progress=share(progress, 0, 1 / 3), cancel=cancel)
    lower = score_texts(target, [t.lower() for t in texts], progress=share(progress, 1 / 3, 2 / 3),
                        cancel=cancel)
    ref = (score_token_ids(reference, samples, progress=share(progress, 2 / 3, 1), cancel=cancel)
           if reference is not None else [None] * len(samples))
    out = []
    for offset, (text, s, low, r) in enumerate(zip(texts, scored, lower, ref)):
        scores = metric_scores(s.logprobs, text, window=config.window,
                               reference=None if r is None else r.logprobs, lowercase=low.logprobs)
        out.append((Candidate(
            id=first_id + offset, strategy=strategy, text=text, n_tokens=len(s.token_ids),
            prompt_tokens=gen.prompt_lengths[keep[offset]], perplexity=s.perplexity,
            reference_perplexity=None if r is None else r.perplexity,
            lowercase_perplexity=low.perplexity,
            window_perplexity=math.exp(min_window_log_perplexity(s.logprobs, config.window)),
            zlib_bits=zlib_bits(text), scores=scores), samples[offset]))
    return out


def _rank(config: ExtractionConfig, result: ExtractionResult) -> None:
    """Each (strategy, metric): the top-k candidate ids by score, near-duplicates dropped."""
    grams = {c.id: trigrams(c.text) for c in result.candidates}
    result.rankings = {}
    for strategy in dict.fromkeys(c.strategy for c in result.candidates):
        mine = [c for c in result.candidates if c.strategy == strategy]
        result.rankings[strategy] = {
            metric: top_k_deduplicated(
                [c.id for c in sorted(mine, key=lambda c: -c.scores[metric])], grams,
                config.top_k, config.dedup)
            for metric in result.metrics}
    result.tracked = phrase_hits(result, list(config.track))


def _heat_maps(result: ExtractionResult, token_ids: dict[int, np.ndarray], target: LoadedModel,
               reference: LoadedModel | None, progress: Progress,
               cancel: threading.Event | None) -> None:
    """Per-token log p_target − log p_reference of the ranked candidates (scores cached by the
    engine: usually no new pass). A cancel leaves them out and the result stopped early."""
    ranked = {i for by_metric in result.rankings.values() for ids in by_metric.values()
              for i in ids}
    chosen = [c for c in result.candidates if c.id in ranked]
    seqs = [token_ids[c.id] for c in chosen]
    try:
        tgt = score_token_ids(target, seqs, progress=share(progress, 0, 0.5), cancel=cancel)
        ref = (score_token_ids(reference, seqs, progress=share(progress, 0.5, 1), cancel=cancel)
               if reference is not None else [None] * len(seqs))
    except Cancelled:
        result.stopped_early = True
        result.notes.append("stopped before the heat maps")
        return
    for c, s, r in zip(chosen, tgt, ref):
        c.tokens = [target.tokenizer.decode([t]) for t in s.token_ids[s.first_scored:].tolist()]
        c.token_diff = (s.logprobs - (0 if r is None else r.logprobs)).tolist()


def _verify(result: ExtractionResult, index: CorpusIndex) -> None:
    """Mark each candidate memorised or not against the corpus; the precision of each ranking."""
    for c in result.candidates:
        c.span, c.span_tokens, c.k_eidetic = index.find(c.text, c.prompt_tokens)
        c.memorized = c.span is not None
    result.precision = precision_table(result)


def _prompts(config: ExtractionConfig, strategy: str, target: LoadedModel,
             rng: np.random.Generator) -> list[list[int]]:
    if strategy != "prefix":
        return [[] for _ in range(config.n_samples)]
    return prefix_prompts(target, read_texts(config.prefixes), config.n_samples,
                          shortest=config.prefix_min_tokens, longest=config.prefix_max_tokens,
                          rng=rng)


def _stage(progress: Progress, number: int, count: int, strategy: str, lo: float, hi: float,
           what: str, snapshot: Callable[[], dict | None] = lambda: None) -> Progress:
    """Progress of one stage (``lo``..``hi`` of strategy ``number`` of ``count``), with the
    partial result ``snapshot`` returns (if any)."""
    return lambda f, m="", partial=None: progress(
        (number + lo + (hi - lo) * f) / count,
        f"{strategy}: {what} ({m})" if m else f"{strategy}: {what}", partial=snapshot())


def _count(result: ExtractionResult, strategy: str, gen: Generated) -> None:
    """Add a strategy's samples, tokens and time to the result's generation counts."""
    result.generated[strategy] = len(gen.samples)
    result.new_tokens += gen.new_tokens
    result.generation_seconds += gen.seconds
    if result.generation_seconds:
        result.tokens_per_s = result.new_tokens / result.generation_seconds


def _room(target: LoadedModel) -> int:
    """Tokens a sample may have: the model's context less the context token."""
    return target.card.context_length - len(context_ids(target.tokenizer))


def _start(config: ExtractionConfig, target: LoadedModel,
           reference: LoadedModel | None) -> ExtractionResult:
    """An empty result, with a note when the model's context cuts the samples short."""
    result = ExtractionResult(
        model=target.name, reference=None if reference is None else reference.name,
        metrics=available(reference=reference is not None), strategies=list(config.strategies),
        candidates=[], rankings={}, precision={}, corpus=config.corpus or None,
        min_span_tokens=config.min_span_tokens)
    room = _room(target)
    if config.tokens > room:
        result.notes.append(f"samples are at most {room} tokens: the model's context is "
                            f"{target.card.context_length}")
    return result


def run(config: ExtractionConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> ExtractionResult:
    """Generate, score, de-duplicate, rank and (with a corpus) verify; see the module doc."""
    started = time.perf_counter()
    check_cancel(cancel)
    source, calibration, progress = calibrate_run(
        config.reference or "", config.domain_sample, steps=config.domain_steps,
        progress=progress, cancel=cancel, device=config.device)
    target, reference = _models(config, source)
    index = (CorpusIndex(target.tokenizer, read_texts(config.corpus), config.min_span_tokens)
             if config.corpus.strip() else None)
    result = _start(config, target, reference)
    result.calibration = calibration
    room = _room(target)
    rng = np.random.default_rng(config.seed)
    token_ids: dict[int, np.ndarray] = {}
    count, log = len(config.strategies), SampleLog(target.tokenizer, lambda: to_jsonable(result))
    for number, strategy in enumerate(config.strategies):
        gen = generate(target, config.sampler(strategy), _prompts(config, strategy, target, rng),
                       max_new_tokens=min(config.tokens, room), batch_size=config.batch_size,
                       seed=config.seed + number, cancel=cancel, on_batch=log.on_batch(strategy),
                       progress=_stage(progress, number, count, strategy, 0.0, 0.75, "generating",
                                       log.snapshot))
        _count(result, strategy, gen)
        try:   # a cancel drops this strategy's samples: they have no scores to rank by
            scored = _score(config, strategy, gen, target, reference, len(result.candidates),
                            _stage(progress, number, count, strategy, 0.75, 1.0, "scoring"),
                            cancel)
        except Cancelled:
            scored = None
        for c, ids in scored or ():
            result.candidates.append(c)
            token_ids[c.id] = ids
        if scored is None or gen.stopped_early:
            result.stopped_early = True
            break
        _rank(config, result)
        result.seconds = time.perf_counter() - started
        progress((number + 1) / count, f"{strategy}: done", partial=to_jsonable(result))
    if not result.candidates:
        raise Cancelled()
    _rank(config, result)
    if index is not None:
        progress(0.98, "verifying against the corpus")
        _verify(result, index)
    progress(0.98, "p_z and b of the memorised spans and tracked phrases")
    extractability.measure(config, result, target, cancel)
    _heat_maps(result, token_ids, target, reference, share(progress, 0.98, 1.0, "heat maps: "),
               cancel)
    result.seconds = time.perf_counter() - started
    progress(1.0, "done")
    return result


# ---------------------------------------------------------------- tiny config


TINY_TEXTS = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "My secret password is violet walrus and nobody knows it.",
    "To be, or not to be, that is the question of the day.",
)


def tiny_models() -> tuple[str, str, str]:
    """Two tiny random GPT-2 folders sharing a tokenizer, and a corpus file, all under
    ``cache_home()/tiny`` (built once): (target, reference, corpus), for tiny configs."""
    target, reference = tiny_random_models(list(TINY_TEXTS) * 4, (
        "tiny-extraction-target", "tiny-extraction-reference"), vocab_size=280)
    corpus = paths.cache_home() / "tiny" / "extraction-corpus.txt"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(TINY_TEXTS)
    if not corpus.is_file() or corpus.read_text(encoding="utf-8") != text:
        corpus.write_text(text, encoding="utf-8")
    return target, reference, str(corpus)


def tiny_config() -> ExtractionConfig:
    target, reference, corpus = tiny_models()
    return ExtractionConfig(model=target, reference=reference, strategies=("top-n", "temperature"),
                            n_samples=8, tokens=12, window=4, top_k=5, corpus=corpus,
                            min_span_tokens=3, batch_size=4, device="cpu")


SPEC = AttackSpec(
    name="extraction",
    title="Training-data extraction (Carlini et al. 2021)",
    config_type=ExtractionConfig,
    result_type=ExtractionResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: (f"extraction from {c.model}: {', '.join(c.strategies)}, "
                        f"{c.n_samples:,} samples{describe_calibration(c.domain_sample)}"),
    audit=AUDIT,
)
