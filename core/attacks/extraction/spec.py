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
from core.attacks.extraction.chat import ChatTurn, chat_turns, end_of_turn, pick_prompts
from core.attacks.extraction.config import (SAME_TOKENS, Candidate, ExtractionConfig,
                                            ExtractionResult)
from core.attacks.extraction.pii_found import mark_pii
from core.attacks.extraction.verification import CorpusIndex, precision_table
from core.attacks.extraction.views import headline, phrase_hits
from core.calibration.domain import calibrate_run, describe_calibration
from core.calibration.public import (PublicRows, PublicSample, arranged, load_public, mark_rows,
                                     public_note)
from core.readers.data import read_texts
from core.generation.metrics import (available, metric_scores, min_window_log_perplexity,
                                     top_k_deduplicated, trigrams, zlib_bits)
from core.generation.sampling import Generated, SampleLog, generate, prefix_prompts
from core.models import LoadedModel, resolve_model
from core.models.compat import check_same_vocabulary
from core.models.tiny import tiny_random_models
from core.runtime import Cancelled, Progress, check_cancel, no_progress, share
from core.scoring import context_ids, score_token_ids
from core.serialize import to_jsonable
from core.specs import AttackSpec
from core.attacks.extraction import cost as attack_cost


def _models(config: ExtractionConfig, reference: str) -> tuple[LoadedModel, LoadedModel | None]:
    """The target and the model ``reference`` names (none when empty)."""
    target = resolve_model(config.model, device=config.device)
    if not reference:
        return target, None
    reference = resolve_model(reference, device=config.device)
    check_same_vocabulary(target, reference, why=SAME_TOKENS)
    return target, reference


def _part_logprobs(lm: LoadedModel, samples: list, starts: list[int], *, add_bos: bool,
                   progress: Progress, cancel: threading.Event | None) -> list[np.ndarray]:
    """log p of each sample's tokens from ``starts[i]`` on, given the tokens before them."""
    scored = score_token_ids(lm, samples, add_bos=add_bos, progress=progress, cancel=cancel)
    return [s.logprobs[start - s.first_scored:] for s, start in zip(scored, starts)]


def _score(config: ExtractionConfig, strategy: str, gen: Generated, target: LoadedModel,
           reference: LoadedModel | None, first_id: int, progress: Progress,
           cancel: threading.Event | None) -> list[tuple[Candidate, tuple[np.ndarray, int]]]:
    """Score the samples of one strategy once under each model: (candidate, its token ids and
    where its scored part starts: a chat reply after its prompt). ``Cancelled`` when
    ``cancel`` is set, at the next batch of a pass."""
    chat_replies, tok = strategy == "chat", target.tokenizer
    starts_all = gen.prompt_lengths if chat_replies else [0] * len(gen.samples)
    texts = [tok.decode(s[start:].tolist()) for s, start in zip(gen.samples, starts_all)]
    keep = [i for i, t in enumerate(texts) if len(gen.samples[i]) > starts_all[i] and t.strip()]
    samples, texts = [gen.samples[i] for i in keep], [texts[i] for i in keep]
    starts = [starts_all[i] for i in keep]
    lowered = [list(s[:start]) + tok(t.lower(), add_special_tokens=False)["input_ids"]
               for s, start, t in zip(samples, starts, texts)]
    passes = [(target, samples), (target, lowered)] + ([(reference, samples)] if reference else [])
    own, lower, *ref = [_part_logprobs(lm, seqs, starts, add_bos=not chat_replies,
                                       progress=share(progress, k / 3, (k + 1) / 3), cancel=cancel)
                        for k, (lm, seqs) in enumerate(passes)]
    ref = ref[0] if ref else [None] * len(samples)
    out = []
    for offset, (text, lp, low, r) in enumerate(zip(texts, own, lower, ref)):
        i, start = keep[offset], starts[offset]
        out.append((Candidate(
            id=first_id + offset, strategy=strategy, text=text, n_tokens=len(lp),
            prompt_tokens=0 if chat_replies else gen.prompt_lengths[i],
            perplexity=_perplexity(lp), reference_perplexity=None if r is None else _perplexity(r),
            lowercase_perplexity=_perplexity(low),
            window_perplexity=math.exp(min_window_log_perplexity(lp, config.window)),
            zlib_bits=zlib_bits(text), scores=metric_scores(
                lp, text, window=config.window, reference=r, lowercase=low),
            prompt=tok.decode(samples[offset][:start].tolist()) if chat_replies else ""),
            (samples[offset], start)))
    return out


def _perplexity(logprobs: np.ndarray) -> float:
    return math.exp(-float(np.mean(logprobs))) if len(logprobs) else math.nan


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


def _mark_public(result: ExtractionResult, public: PublicSample, how: PublicRows) -> None:
    """Mark the ranked and the memorised candidates against the public sample and arrange
    each ranking as ``how`` says (precision stays the paper's, over every ranked candidate)."""
    by_id = {c.id: c for c in result.candidates}
    ranked = {i: by_id[i] for ids in _rankings(result) for i in ids}
    mark_rows(list(ranked.values()) + [c for c in result.candidates
                                       if c.memorized and c.id not in ranked],
              public, text=lambda c: c.text)
    result.notes.append(public_note(sum(c.public.public for c in ranked.values()), len(ranked),
                                    public, how, "ranked candidates"))
    for by_metric in result.rankings.values():
        for metric, ids in by_metric.items():
            by_metric[metric] = arranged(ids, how, public=lambda i: by_id[i].public.public)


def _rankings(result: ExtractionResult) -> list[list[int]]:
    """Every ranking's candidate ids."""
    return [ids for by_metric in result.rankings.values() for ids in by_metric.values()]


def _heat_maps(result: ExtractionResult, token_ids: dict[int, tuple[np.ndarray, int]],
               target: LoadedModel, reference: LoadedModel | None, progress: Progress,
               cancel: threading.Event | None) -> None:
    """Per-token log p_target − log p_reference of the ranked candidates (scores cached by the
    engine: usually no new pass). A cancel leaves them out and the result stopped early."""
    ranked = {i for ids in _rankings(result) for i in ids}
    for chat_replies in (False, True):
        chosen = [c for c in result.candidates
                  if c.id in ranked and (c.strategy == "chat") == chat_replies]
        seqs, starts = [token_ids[c.id][0] for c in chosen], [token_ids[c.id][1] for c in chosen]
        try:
            tgt, *ref = [_part_logprobs(lm, seqs, starts, add_bos=not chat_replies,
                                        progress=share(progress, k / 2, (k + 1) / 2),
                                        cancel=cancel)
                         for k, lm in enumerate([target] + ([reference] if reference else []))]
        except Cancelled:
            result.stopped_early = True
            result.notes.append("stopped before the heat maps")
            return
        for n, (c, seq, start) in enumerate(zip(chosen, seqs, starts)):
            c.tokens = [target.tokenizer.decode([t]) for t in seq[start:].tolist()]
            c.token_diff = (tgt[n] - (ref[0][n] if ref else 0)).tolist()


def _verify(result: ExtractionResult, index: CorpusIndex) -> None:
    """Mark each candidate memorised or not against the corpus; the precision of each ranking."""
    for c in result.candidates:
        c.span, c.span_tokens, c.k_eidetic = index.find(c.text, c.prompt_tokens)
        c.memorized = c.span is not None
    result.precision = precision_table(result)


def _prompts(config: ExtractionConfig, strategy: str, target: LoadedModel,
             rng: np.random.Generator, turns: list[ChatTurn]) -> list[list[int]]:
    if strategy == "chat":
        return [turn.prompt_ids for turn in pick_prompts(turns, config.n_samples, rng)]
    if strategy != "prefix":
        return [[] for _ in range(config.n_samples)]
    return prefix_prompts(target, read_texts(config.prefixes), config.n_samples,
                          shortest=config.prefix_min_tokens, longest=config.prefix_max_tokens,
                          rng=rng)


def _generate(config: ExtractionConfig, strategy: str, number: int, target: LoadedModel,
              rng: np.random.Generator, turns: list[ChatTurn], **options) -> Generated:
    """One strategy's samples (a chat reply after its prompt alone, to the end of its turn)."""
    chat_replies = strategy == "chat"
    stops = (end_of_turn(target, config.chat_template),) if chat_replies else ()
    return generate(target, config.sampler(strategy), _prompts(config, strategy, target, rng, turns),
                    max_new_tokens=min(config.tokens, _room(target)),
                    batch_size=config.batch_size, seed=config.seed + number,
                    after_context=not chat_replies, more_stops=tuple(s for s in stops if s),
                    **options)


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
    public = load_public(config)
    source, calibration, progress = calibrate_run(
        config.reference or "", config.domain_sample, steps=config.domain_steps,
        progress=progress, cancel=cancel, device=config.device)
    target, reference = _models(config, source)
    corpus = read_texts(config.corpus) if config.corpus.strip() else None
    index = (CorpusIndex(target.tokenizer, corpus, config.min_span_tokens)
             if corpus is not None else None)
    result = _start(config, target, reference)
    result.calibration = calibration
    rng = np.random.default_rng(config.seed)
    turns = chat_turns(config, target) if "chat" in config.strategies else []
    token_ids: dict[int, tuple[np.ndarray, int]] = {}
    count, log = len(config.strategies), SampleLog(target.tokenizer, lambda: to_jsonable(result))
    for number, strategy in enumerate(config.strategies):
        gen = _generate(config, strategy, number, target, rng, turns, cancel=cancel,
                        on_batch=log.on_batch(strategy),
                        progress=_stage(progress, number, count, strategy, 0.0, 0.75,
                                        "generating", log.snapshot))
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
    if public is not None:
        _mark_public(result, public, config.public_rows)
    mark_pii(result, token_ids, target.tokenizer, corpus)
    progress(0.98, "p_z and b of the memorised spans and tracked phrases")
    extractability.measure(config, result, target, cancel)
    if "chat" in config.strategies:
        progress(0.98, "p_z and b of the trained replies")
        extractability.measure_replies(config, result, target, turns, cancel)
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
    cost=attack_cost.extraction,
)
