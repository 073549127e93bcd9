"""Training-data extraction from a language model (Carlini et al., USENIX Security 2021).

Two steps. **Generate** many samples from the target model, each one document started from the
end-of-text context token and stopped at the next one (or after ``tokens`` tokens):

* ``top-n``: top-n sampling, n = 40, 256 tokens;
* ``temperature``: a decaying temperature, β from 10 down to 1 over the first 20 tokens, then 1
  (explore diverse prefixes, then follow confident paths);
* ``prefix``: top-n sampling after the first 5-10 tokens of a random document of a text file
  (the paper's "Internet" prefixes).

**Rank** them by membership metrics, all read from the per-token log-probabilities of the
scoring engine (each sample scored once per model) and oriented as in the paper's code, higher
meaning more likely memorised (ppl = exp(−mean log p) of the sample under a model):

* ``perplexity``: −log ppl_target;
* ``reference``: log ppl_reference / log ppl_target (a smaller or earlier model, same vocabulary);
* ``zlib``: zlib entropy (bits of the zlib-compressed UTF-8 text) / log ppl_target;
* ``lowercase``: log ppl_target(lowercased text) / log ppl_target;
* ``window``: −log of the minimum perplexity over sliding windows of ``window`` tokens.

Near-duplicates are removed while a ranking is read (trigram multisets: s is a duplicate of an
already kept s' when |tri(s) ∩ tri(s')| ≥ |tri(s)|/2, §5.3 of the paper) and the top-k of each
(strategy × metric) is kept. With a training corpus the candidates are **verified**: one is
memorised when it holds a verbatim span of at least ``min_span_tokens`` tokens of a corpus
document; its k-eidetic count is the number of documents holding that span (Definition 2), and
each ranking gets its precision (the paper's Table 3).
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
import threading
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from core.runtime import Progress, is_cancelled, no_progress
from core.specs import AttackSpec
from core.errors import UserError
from core.runtime import Cancelled
from core.models import LoadedModel, resolve_model
from core.scoring import Sampler, context_ids, score_texts, score_token_ids
from core.serialize import to_jsonable

STRATEGIES = ("top-n", "temperature", "prefix")
METRICS = {
    "perplexity": "−log perplexity of the target",
    "reference": "log perplexity of the reference ÷ log perplexity of the target",
    "zlib": "zlib entropy (bits) ÷ log perplexity of the target",
    "lowercase": "log perplexity of the lowercased text ÷ log perplexity of the target",
    "window": "−log of the minimum perplexity over a sliding window",
}
DEMO_PREFIX = "demo:"  # "demo:private_train" etc.: a data file of the demo scenario
LOG_PPL_FLOOR = 1e-6  # log perplexity of a sample the model predicts perfectly, for the ratios
# generate() options that switch off any sampling default a model's generation config sets,
# so that the only warping is the Sampler's own (_SamplerLogits).
NEUTRAL_GENERATION = dict(temperature=1.0, top_k=0, top_p=1.0, typical_p=1.0,
                          repetition_penalty=1.0, no_repeat_ngram_size=0)


# ---------------------------------------------------------------- inputs


def read_documents(source: str) -> list[str]:
    """Documents from a file: a .jsonl of records with "text", a .json list of strings, or one
    document per non-blank line of a text file; ``demo:private_train``, ``demo:public_train``,
    ``demo:user_samples`` and ``demo:validation`` are the demo scenario's data files."""
    if source.startswith(DEMO_PREFIX):
        from core.demo.scenario import data_file
        path = data_file(source.removeprefix(DEMO_PREFIX))
    else:
        path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"no such file: {source} (give a .txt with one document per line, a "
                        ".json list of strings, a .jsonl with a \"text\" field, or a demo file "
                        "such as demo:private_train)")
    try:
        content = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path.name} is not UTF-8 text") from None
    try:
        if path.suffix.lower() == ".jsonl":
            docs = [json.loads(line)["text"] for line in content.splitlines() if line.strip()]
        elif path.suffix.lower() == ".json":
            docs = json.loads(content)
        else:
            docs = content.splitlines()
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise UserError(f"{path.name} is not a valid {path.suffix} file of documents ({err})") from None
    if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
        raise UserError(f"{path.name} must hold strings (a JSON list, or \"text\" fields)")
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise UserError(f"{path.name} holds no text: put one document per line")
    return docs


def check_same_vocabulary(a: LoadedModel, b: LoadedModel) -> None:
    """Token-level comparisons need one vocabulary: a ``UserError`` when the two differ."""
    if a.tokenizer.get_vocab() != b.tokenizer.get_vocab():
        raise UserError(f"{a.name} and {b.name} have different tokenizers, so their per-token "
                        "log-probabilities cannot be compared: pick a model of the same family "
                        "(same vocabulary)")


def decaying_schedule(start: float, tokens: int, end: float = 1.0) -> tuple[float, ...]:
    """β_i decreasing linearly from ``start`` to ``end`` over the first ``tokens`` tokens, then
    ``end`` (Carlini et al.: 10 to 1 over 20 tokens)."""
    return tuple(float(t) for t in np.linspace(start, end, max(tokens, 1)))


# ---------------------------------------------------------------- generation


class _SamplerLogits(LogitsProcessor):
    """Turns next-token logits z into the ``Sampler``'s: z/β_i, and −inf outside the top-k
    (the very density the scoring engine gives for ``sampler``, Stock et al. §3.2)."""

    def __init__(self, sampler: Sampler, prompt_length: int):
        self.sampler, self.prompt_length = sampler, prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        step = input_ids.shape[1] - self.prompt_length
        scores = scores / float(self.sampler.temperatures(step, 1)[0])
        if self.sampler.top_k is not None and self.sampler.top_k < scores.shape[-1]:
            kth = scores.topk(self.sampler.top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        return scores


class _Watch(StoppingCriteria):
    """Reports progress every few steps and stops every row when ``cancel`` is set."""

    def __init__(self, on_step, cancel: threading.Event | None):
        self.on_step, self.cancel = on_step, cancel

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        self.on_step(input_ids.shape[1])
        return torch.full((input_ids.shape[0],), is_cancelled(self.cancel), dtype=torch.bool,
                          device=input_ids.device)


@dataclass
class Generated:
    samples: list[np.ndarray]   # prompt + generated tokens (no context token, no end-of-text)
    prompt_lengths: list[int]
    new_tokens: int             # tokens generated, end-of-text tokens included
    seconds: float
    stopped_early: bool


def stop_ids(lm: LoadedModel) -> list[int]:
    """End-of-text ids: the context token that separates documents, and the EOS."""
    ids = set(context_ids(lm.tokenizer))
    if lm.tokenizer.eos_token_id is not None:
        ids.add(int(lm.tokenizer.eos_token_id))
    return sorted(ids)


def _step_reporter(progress: Progress, done: int, size: int, total: int, length: int, steps: int):
    """Progress every 16 generated tokens of a chunk of ``size`` samples after ``done`` others."""
    def on_step(current_length: int) -> None:
        step = current_length - length
        if step and step % 16 == 0:
            progress(min((done + size * step / steps) / total, 1.0), f"generated {done} of {total} samples")
    return on_step


def generate(lm: LoadedModel, sampler: Sampler, prompts: list[list[int]], *, max_new_tokens: int,
             batch_size: int = 64, seed: int = 0, progress: Progress = no_progress,
             cancel: threading.Event | None = None) -> Generated:
    """One sample per prompt (token ids after the context token), drawn from ``sampler`` with
    transformers' ``generate`` and its KV cache, ``batch_size`` prompts of one length at a time.

    Each sample stops at end-of-text or after ``max_new_tokens`` (fewer when the model's
    context is shorter). On cancel, the finished chunks are returned with ``stopped_early``.
    """
    context = context_ids(lm.tokenizer)
    if not context and not all(prompts):
        raise UserError(f"{lm.name} has no end-of-text, BOS or EOS token to start a sample from: "
                        "use the prefix strategy")
    stops = stop_ids(lm)
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else stops[0]
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, prompt in enumerate(prompts):
        by_length[len(prompt)].append(i)
    chunks = [idx[s: s + batch_size] for _, idx in sorted(by_length.items())
              for s in range(0, len(idx), batch_size)]
    out: list[np.ndarray | None] = [None] * len(prompts)
    started, new_tokens, done = time.perf_counter(), 0, 0
    progress(0.0, f"generating {len(prompts)} samples")
    for number, chunk in enumerate(chunks):
        if is_cancelled(cancel):
            break
        prompt = torch.tensor([context + list(prompts[i]) for i in chunk], device=lm.device)
        length = prompt.shape[1]
        steps = min(max_new_tokens, lm.card.context_length - length)
        if steps < 1:
            raise UserError(f"a prompt of {length} tokens leaves no room in the model's context "
                            f"of {lm.card.context_length}: use shorter prefixes")
        watch = _Watch(_step_reporter(progress, done, len(chunk), len(prompts), length, steps), cancel)
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(seed * 100_003 + number)
            output = lm.model.generate(
                input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=True,
                max_new_tokens=steps, **NEUTRAL_GENERATION,
                logits_processor=LogitsProcessorList([_SamplerLogits(sampler, length)]),
                stopping_criteria=StoppingCriteriaList([watch]), eos_token_id=stops, pad_token_id=pad)
        if is_cancelled(cancel):
            break
        for row, i in zip(output[:, length:].cpu().numpy(), chunk):
            ends = np.flatnonzero(np.isin(row, stops))
            stop = int(ends[0]) if ends.size else len(row)
            new_tokens += min(stop + 1, len(row))
            out[i] = np.concatenate([np.asarray(prompts[i], dtype=np.int64), row[:stop]])
        done += len(chunk)
        progress(done / len(prompts), f"generated {done} of {len(prompts)} samples")
    kept = [i for i, s in enumerate(out) if s is not None]
    return Generated([out[i] for i in kept], [len(prompts[i]) for i in kept], new_tokens,
                     time.perf_counter() - started, len(kept) < len(prompts))


def prefix_prompts(lm: LoadedModel, documents: list[str], n: int, *, shortest: int, longest: int,
                   rng: np.random.Generator) -> list[list[int]]:
    """``n`` prompts: the first L ∈ [shortest, longest] tokens of a random document."""
    ids = [d for d in lm.tokenizer(documents, add_special_tokens=False)["input_ids"] if len(d) >= shortest]
    if not ids:
        raise UserError(f"no prefix document has {shortest} tokens: give longer texts")
    picks = rng.integers(len(ids), size=n)
    lengths = rng.integers(shortest, longest + 1, size=n)
    return [list(ids[p][:length]) for p, length in zip(picks, lengths)]


# ---------------------------------------------------------------- metrics


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


def metric_scores(target: np.ndarray, text: str, *, window: int, reference: np.ndarray | None = None,
                  lowercase: np.ndarray | None = None) -> dict[str, float]:
    """The five membership scores of one sample from per-token log-probs (higher: more likely
    memorised); ``reference``/``lowercase`` are the reference model's log-probs of the same
    tokens and the target's of the lowercased text (their metric is left out when None)."""
    log_ppl = log_perplexity(target)
    scores = {"perplexity": -log_ppl}
    if reference is not None:
        scores["reference"] = log_perplexity(reference) / log_ppl
    scores["zlib"] = zlib_bits(text) / log_ppl
    if lowercase is not None:
        scores["lowercase"] = log_perplexity(lowercase) / log_ppl
    scores["window"] = -min_window_log_perplexity(target, window)
    return scores


# ---------------------------------------------------------------- de-duplication


def trigrams(text: str) -> Counter:
    """The multiset of word trigrams of ``text`` (the words themselves when fewer than 3)."""
    words = text.split()
    if len(words) < 3:
        return Counter([tuple(words)])
    return Counter(zip(words, words[1:], words[2:]))


def is_near_duplicate(candidate: Counter, kept: Counter) -> bool:
    """|tri(s) ∩ tri(s')| ≥ |tri(s)| / 2 (Carlini et al. §5.3)."""
    return sum((candidate & kept).values()) * 2 >= sum(candidate.values())


def top_k_deduplicated(order: list[int], grams: list[Counter], k: int, dedup: bool = True) -> list[int]:
    """The first ``k`` of ``order`` that are not near-duplicates of an earlier kept one."""
    kept: list[int] = []
    for i in order:
        if len(kept) == k:
            break
        if not dedup or not any(is_near_duplicate(grams[i], grams[j]) for j in kept):
            kept.append(i)
    return kept


# ---------------------------------------------------------------- verification


class CorpusIndex:
    """Verbatim spans of ``span`` tokens of a corpus, to verify candidates (token n-gram hashes)."""

    def __init__(self, tokenizer, documents: list[str], span: int):
        if span < 1:
            raise UserError("the verbatim span must be at least 1 token")
        self.tokenizer, self.span = tokenizer, span
        self.docs = [np.asarray(d, dtype=np.int64)
                     for d in tokenizer(documents, add_special_tokens=False)["input_ids"]]
        self.grams: dict[bytes, list[int]] = defaultdict(list)
        for number, doc in enumerate(self.docs):
            for start in range(len(doc) - span + 1):
                holders = self.grams[doc[start: start + span].tobytes()]
                if not holders or holders[-1] != number:
                    holders.append(number)

    def find(self, text: str, prompt_tokens: int = 0) -> tuple[str | None, int, int]:
        """The longest run of the text's span-grams found in the corpus, as (span text, span
        tokens, k-eidetic count: documents holding the whole span); (None, 0, 0) if none.
        Spans within the first ``prompt_tokens`` tokens (a given prefix, not generated) are
        not counted."""
        ids = np.asarray(self.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)
        hits = [i + self.span > prompt_tokens and ids[i: i + self.span].tobytes() in self.grams
                for i in range(len(ids) - self.span + 1)]
        best_start, best_len, run = 0, 0, 0
        for i, hit in enumerate(hits):
            run = run + 1 if hit else 0
            if run > best_len:
                best_start, best_len = i - run + 1, run
        if not best_len:
            return None, 0, 0
        span_ids = ids[best_start: best_start + best_len + self.span - 1]
        holders = self.grams[span_ids[: self.span].tobytes()]
        count = sum(_contains(self.docs[d], span_ids) for d in holders)
        return self.tokenizer.decode(span_ids.tolist()), len(span_ids), max(count, 1)


def _contains(doc: np.ndarray, part: np.ndarray) -> bool:
    """True when ``part`` occurs as a contiguous run of ``doc`` (both int64)."""
    haystack, needle, at = doc.tobytes(), part.tobytes(), 0
    while (at := haystack.find(needle, at)) >= 0:
        if at % 8 == 0:
            return True
        at += 1
    return False


def precision_table(rankings: dict[str, dict[str, list[int]]], memorized: dict[int, bool]) -> dict[str, dict[str, float | None]]:
    """Fraction of each ranking's candidates marked memorised (None for an empty ranking)."""
    return {strategy: {metric: (sum(bool(memorized.get(i)) for i in ids) / len(ids) if ids else None)
                       for metric, ids in by_metric.items()}
            for strategy, by_metric in rankings.items()}


def ranked_rows(result: dict, strategy: str, metric: str) -> list[dict]:
    """One ranking of a result in its JSON form (a stored run, the CLI), best first: rank,
    candidate id, the metric's score, perplexities, verification and text."""
    by_id = {c["id"]: c for c in result["candidates"]}
    rows = []
    for rank, i in enumerate(result["rankings"].get(strategy, {}).get(metric, []), start=1):
        c = by_id[i]
        rows.append({"rank": rank, "id": i, "score": c["scores"][metric], "perplexity": c["perplexity"],
                     "reference_perplexity": c["reference_perplexity"], "zlib_bits": c["zlib_bits"],
                     "memorized": c["memorized"], "k_eidetic": c["k_eidetic"] or None,
                     "span_tokens": c["span_tokens"] or None, "text": c["text"]})
    return rows


def phrase_hits(result: dict, phrases: list[str]) -> dict[str, list[str]]:
    """Where each phrase occurs verbatim in a ranking of a result (JSON form), as
    "strategy/metric #rank" (e.g. the demo's planted secret and canaries)."""
    by_id = {c["id"]: c["text"] for c in result["candidates"]}
    return {phrase: [f"{strategy}/{metric} #{rank}"
                     for strategy, by_metric in result["rankings"].items()
                     for metric, ids in by_metric.items()
                     for rank, i in enumerate(ids, start=1) if phrase in by_id[i]]
            for phrase in phrases}


# ---------------------------------------------------------------- the attack


@dataclass(frozen=True)
class ExtractionConfig:
    """Carlini et al.'s defaults; ``strategies`` is a comma-separated list of STRATEGIES.

    ``reference`` empty skips the reference metric; ``corpus`` empty skips verification;
    files may be the demo's, e.g. ``demo:private_train`` / ``demo:public_train``.
    """

    model: str = "demo:updated"
    reference: str = "demo:base"
    strategies: str = "top-n"
    n_samples: int = 1000             # per strategy
    tokens: int = 256                 # at most, per sample (fewer when the context is shorter)
    top_n: int = 40                   # top-n sampling (top-n and prefix strategies)
    temperature_start: float = 10.0   # decaying temperature: from this to 1 ...
    decay_tokens: int = 20            # ... over the first tokens
    prefixes: str = ""                # file of prefix documents (prefix strategy)
    prefix_min_tokens: int = 5
    prefix_max_tokens: int = 10
    window: int = 50                  # sliding window of the window metric
    top_k: int = 100                  # candidates kept per (strategy, metric)
    dedup: bool = True
    corpus: str = ""                  # training corpus to verify against
    min_span_tokens: int = 50         # verbatim span that counts as memorised
    batch_size: int = 64
    seed: int = 0
    device: str = "auto"

    def __post_init__(self):
        names = self.strategy_list
        unknown = [s for s in names if s not in STRATEGIES]
        if unknown or not names:
            raise UserError(f"unknown strategy {', '.join(unknown) or '(none)'}: choose from "
                            f"{', '.join(STRATEGIES)}")
        if "prefix" in names and not self.prefixes.strip():
            raise UserError("the prefix strategy needs a file of prefix documents (--prefixes FILE)")
        whole = {"n_samples": self.n_samples, "tokens": self.tokens, "top_n": self.top_n,
                 "decay_tokens": self.decay_tokens, "window": self.window, "top_k": self.top_k,
                 "min_span_tokens": self.min_span_tokens, "batch_size": self.batch_size,
                 "prefix_min_tokens": self.prefix_min_tokens}
        for name, value in whole.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UserError(f"{name.replace('_', ' ')} must be a whole number >= 1, not {value!r}")
        if self.prefix_max_tokens < self.prefix_min_tokens:
            raise UserError("the longest prefix must be at least the shortest one")
        if not (math.isfinite(self.temperature_start) and self.temperature_start >= 1.0):
            raise UserError(f"the starting temperature must be >= 1, not {self.temperature_start!r}")
        if not self.model.strip():
            raise UserError("choose a target model")

    @property
    def strategy_list(self) -> list[str]:
        return list(dict.fromkeys(s.strip() for s in self.strategies.split(",") if s.strip()))

    def sampler(self, strategy: str) -> Sampler:
        if strategy == "temperature":
            return Sampler(temperature=decaying_schedule(self.temperature_start, self.decay_tokens))
        return Sampler(top_k=self.top_n)


@dataclass
class Candidate:
    """One generated sample and its scores (token heat map only for ranked candidates)."""

    id: int
    strategy: str
    text: str
    n_tokens: int
    prompt_tokens: int
    perplexity: float
    reference_perplexity: float | None
    lowercase_perplexity: float
    window_perplexity: float
    zlib_bits: int
    scores: dict[str, float]
    memorized: bool | None = None     # None: not verified
    span: str | None = None
    span_tokens: int = 0
    k_eidetic: int = 0
    tokens: list[str] | None = None
    token_diff: list[float] | None = None  # log p_target − log p_reference per token (or log p_target)


@dataclass
class ExtractionResult:
    model: str
    reference: str | None
    metrics: list[str]
    strategies: list[str]
    candidates: list[Candidate]
    rankings: dict[str, dict[str, list[int]]]        # strategy -> metric -> candidate ids, best first
    precision: dict[str, dict[str, float | None]]    # empty without a corpus
    corpus: str | None
    min_span_tokens: int
    generated: dict[str, int]                        # samples per strategy
    new_tokens: int
    generation_seconds: float
    tokens_per_s: float
    seconds: float
    notes: list[str] = field(default_factory=list)
    stopped_early: bool = False


def _models(config: ExtractionConfig) -> tuple[LoadedModel, LoadedModel | None]:
    target = resolve_model(config.model, device=config.device)
    reference = resolve_model(config.reference, device=config.device) if config.reference.strip() else None
    if reference is not None:
        check_same_vocabulary(target, reference)
    return target, reference


def _score(config: ExtractionConfig, strategy: str, gen: Generated, target: LoadedModel,
           reference: LoadedModel | None, first_id: int,
           progress: Progress) -> list[tuple[Candidate, np.ndarray]]:
    """Score the samples of one strategy once under each model: (candidate, its token ids)."""
    texts = [target.tokenizer.decode(s.tolist()) for s in gen.samples]
    keep = [i for i, t in enumerate(texts) if len(gen.samples[i]) and t.strip()]
    samples, texts = [gen.samples[i] for i in keep], [texts[i] for i in keep]
    scored = score_token_ids(target, samples, progress=lambda f, m="": progress(f / 3, m))
    lower = score_texts(target, [t.lower() for t in texts], progress=lambda f, m="": progress((1 + f) / 3, m))
    ref = (score_token_ids(reference, samples, progress=lambda f, m="": progress((2 + f) / 3, m))
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


def _rank(config: ExtractionConfig, candidates: list[Candidate], metrics: list[str]) -> dict[str, dict[str, list[int]]]:
    grams = {c.id: trigrams(c.text) for c in candidates}
    rankings: dict[str, dict[str, list[int]]] = {}
    for strategy in dict.fromkeys(c.strategy for c in candidates):
        mine = [c for c in candidates if c.strategy == strategy]
        rankings[strategy] = {}
        for metric in metrics:
            order = [c.id for c in sorted(mine, key=lambda c: -c.scores[metric])]
            rankings[strategy][metric] = top_k_deduplicated(order, grams, config.top_k, config.dedup)
    return rankings


def _heat_maps(chosen: list[tuple[Candidate, np.ndarray]], target: LoadedModel,
               reference: LoadedModel | None) -> None:
    """Per-token log p_target − log p_reference (scores cached by the engine: no new pass)."""
    seqs = [ids for _, ids in chosen]
    tgt = score_token_ids(target, seqs)
    ref = score_token_ids(reference, seqs) if reference is not None else [None] * len(seqs)
    for (c, _), s, r in zip(chosen, tgt, ref):
        c.tokens = [target.tokenizer.decode([t]) for t in s.token_ids[s.first_scored:].tolist()]
        c.token_diff = (s.logprobs - (0 if r is None else r.logprobs)).tolist()


def run(config: ExtractionConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> ExtractionResult:
    """Generate, score, de-duplicate, rank and (with a corpus) verify; see the module doc."""
    started = time.perf_counter()
    if is_cancelled(cancel):
        raise Cancelled()
    target, reference = _models(config)
    index = None
    if config.corpus.strip():
        index = CorpusIndex(target.tokenizer, read_documents(config.corpus), config.min_span_tokens)
    metrics = [m for m in METRICS if m != "reference" or reference is not None]
    strategies = config.strategy_list
    rng = np.random.default_rng(config.seed)
    notes, candidates, scored, generated = [], [], [], {}
    new_tokens, gen_seconds, stopped = 0, 0.0, False
    room = target.card.context_length - len(context_ids(target.tokenizer))
    if config.tokens > room:
        notes.append(f"samples are at most {room} tokens: the model's context is {target.card.context_length}")

    def result() -> ExtractionResult:
        return ExtractionResult(
            model=target.name, reference=None if reference is None else reference.name,
            metrics=metrics, strategies=strategies, candidates=candidates, rankings={},
            precision={}, corpus=config.corpus or None, min_span_tokens=config.min_span_tokens,
            generated=dict(generated), new_tokens=new_tokens, generation_seconds=gen_seconds,
            tokens_per_s=new_tokens / gen_seconds if gen_seconds else 0.0,
            seconds=time.perf_counter() - started, notes=notes, stopped_early=stopped)

    share = 1.0 / len(strategies)
    for number, strategy in enumerate(strategies):
        def report(lo: float, hi: float, what: str):
            return lambda f, m="", partial=None: progress(
                (number + lo + (hi - lo) * f) * share, f"{strategy}: {what} ({m})" if m else f"{strategy}: {what}")

        if strategy == "prefix":
            prompts = prefix_prompts(target, read_documents(config.prefixes), config.n_samples,
                                     shortest=config.prefix_min_tokens,
                                     longest=config.prefix_max_tokens, rng=rng)
        else:
            prompts = [[] for _ in range(config.n_samples)]
        gen = generate(target, config.sampler(strategy), prompts, max_new_tokens=min(config.tokens, room),
                       batch_size=config.batch_size, seed=config.seed + number,
                       progress=report(0.0, 0.75, "generating"), cancel=cancel)
        generated[strategy] = len(gen.samples)
        new_tokens, gen_seconds = new_tokens + gen.new_tokens, gen_seconds + gen.seconds
        scored += _score(config, strategy, gen, target, reference, len(candidates),
                         report(0.75, 1.0, "scoring"))
        candidates[:] = [c for c, _ in scored]
        if gen.stopped_early:
            stopped = True
            break
        partial = result()
        partial.rankings = _rank(config, candidates, metrics)
        progress((number + 1) * share, f"{strategy}: done", partial=to_jsonable(partial))
    if not candidates:
        raise Cancelled()

    final = result()
    final.rankings = _rank(config, candidates, metrics)
    ranked = {i for by_metric in final.rankings.values() for ids in by_metric.values() for i in ids}
    if index is not None:
        progress(0.99, "verifying against the corpus")
        for c in candidates:
            c.span, c.span_tokens, c.k_eidetic = index.find(c.text, c.prompt_tokens)
            c.memorized = c.span is not None
        final.precision = precision_table(final.rankings, {c.id: bool(c.memorized) for c in candidates})
    _heat_maps([pair for pair in scored if pair[0].id in ranked], target, reference)
    final.seconds = time.perf_counter() - started
    progress(1.0, "done")
    return final


# ---------------------------------------------------------------- tiny config


TINY_TEXTS = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "My secret password is violet walrus and nobody knows it.",
    "To be, or not to be, that is the question of the day.",
)


@functools.cache
def tiny_models() -> tuple[str, str, str]:
    """Two tiny random GPT-2 folders sharing a tokenizer, and a corpus file (built once per
    process in a temporary folder): (target, reference, corpus), for tiny configs."""
    from core.models.tiny import tiny_random_models

    root = Path(tempfile.mkdtemp(prefix="leakage-lab-tiny-lm-"))
    target, reference = tiny_random_models(root, list(TINY_TEXTS) * 4, (
        "tiny-extraction-target", "tiny-extraction-reference"), vocab_size=280)
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(TINY_TEXTS), encoding="utf-8")
    return target, reference, str(corpus)


def tiny_config() -> ExtractionConfig:
    target, reference, corpus = tiny_models()
    return ExtractionConfig(model=target, reference=reference, strategies="top-n,temperature",
                            n_samples=8, tokens=12, window=4, top_k=5, corpus=corpus,
                            min_span_tokens=3, batch_size=4, device="cpu")


SPEC = AttackSpec(
    name="extraction",
    title="Training-data extraction (Carlini et al. 2021)",
    kind="privacy",
    config_type=ExtractionConfig,
    run=run,
    tiny_config=tiny_config,
)
