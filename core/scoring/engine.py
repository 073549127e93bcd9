"""The scoring engine: per-token log-probabilities of many sequences under one causal LM.

For a sequence x_1..x_n the engine returns log p(x_i | c, x_<i) for every i, where c is one
context token (``<|endoftext|>`` when the vocabulary has it, else BOS, else EOS: see
``context_ids``) prepended so that the first token is scored too; with ``add_bos=False`` (or a tokenizer with neither) x_1 is context only and x_2..x_n are
scored. How:

- sequences are cut into windows of at most ``window`` tokens (the model's context, capped at
  ``MAX_WINDOW``); a longer one is scored with a sliding window moved by ``stride``: each token
  is scored once, in the first window that holds it, i.e. with the most left context any
  window gives it (the Hugging Face perplexity recipe);
- windows are sorted by length and batched, right-padded with an attention mask, under
  ``torch.inference_mode``; a batch is sized to a memory budget for its logits;
- on out-of-memory the batch is halved and retried (one window that does not fit even alone
  is a ``UserError``);
- results are cached by (model load, context, window, stride, sampler, token ids), LRU bounded
  by tokens, so scoring the same texts for another metric costs no forward pass; for a model
  loaded from files also on disk (``core.scoring.cache``), so a new process reuses them;
- one forward pass gives the scores under several samplers at once (``score_under_samplers``),
  e.g. a target model's own log-probabilities and its sampler's density.

Optionally the log-probabilities are those of the *sampler* that would generate the text
(``Sampler``): the lazy-sampling density of Stock et al., "Defending against Reconstruction
Attacks with Rényi Differential Privacy", §3.2.
"""

from __future__ import annotations

import gc
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from core.errors import UserError
from core.runtime import Cancelled
from core.scoring.cache import ScoreStore, SequenceScores


class ScoredModel(Protocol):
    """What the engine needs of a loaded model (``core.models.LoadedModel`` is one): the
    transformers model and tokenizer, its device, its card (``vocab_size``, ``context_length``)
    and a ``key`` unique per load, for the cache. Optionally ``identity``: non-empty only when
    the weights are exactly the files in ``model.name_or_path`` (``core.models.load_model``
    sets it), whose scores are then also cached on disk."""

    model: torch.nn.Module
    tokenizer: Any
    device: torch.device
    card: Any
    key: str

MAX_WINDOW = 1024
MAX_BATCH = 64
# Bytes of float32 logits (x3 for copies) per batch on the CPU. Small batches stay in the CPU's
# caches: on bench.bench_scoring, 64 MB took 3.1-3.6 s against 4.4-5.0 s for 512 MB, 4.0 s for
# 32 MB and 4.7-4.9 s for 16 MB.
CPU_LOGITS_BUDGET = 64 * 2**20
GPU_FREE_FRACTION = 0.25  # of the free GPU memory, for the same

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Sampler:
    """A top-k and/or temperature sampler, whose per-token density is (Stock et al. §3.2)

        λ(x_i | x_<i) = f(x_i | x_<i)^(1/β_i) / Σ_{y ∈ T_k} f(y | x_<i)^(1/β_i)   if x_i ∈ T_k,
                        0                                                          otherwise,

    i.e. log λ = z_{x_i}/β_i − logsumexp_{y ∈ T_k} z_y/β_i for logits z, and −inf outside
    the top-k set T_k. Ties with the k-th logit are kept in T_k (as transformers' top-k
    warper does). ``temperature`` is one β, or a schedule (β_1, β_2, ...) indexed by scored
    token, its last value repeated (Carlini et al.'s decaying temperature).
    """

    top_k: int | None = None
    temperature: float | tuple[float, ...] = 1.0

    def __post_init__(self):
        if isinstance(self.temperature, list):
            object.__setattr__(self, "temperature", tuple(self.temperature))
        temps = self.temperature if isinstance(self.temperature, tuple) else (self.temperature,)
        if not temps or not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in temps):
            raise UserError(f"temperature must be a positive number (or a list of them), not {self.temperature!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise UserError(f"top-k must be a whole number >= 1 (or none), not {self.top_k!r}")

    @property
    def is_plain(self) -> bool:
        """True when this is the model's own distribution (no top-k, temperature 1)."""
        temps = self.temperature if isinstance(self.temperature, tuple) else (self.temperature,)
        return self.top_k is None and all(t == 1.0 for t in temps)

    def temperatures(self, first: int, count: int) -> np.ndarray:
        """β for the scored tokens ``first .. first + count - 1``."""
        if not isinstance(self.temperature, tuple):
            return np.full(count, float(self.temperature))
        schedule = np.asarray(self.temperature, dtype=np.float64)
        return schedule[np.minimum(np.arange(first, first + count), len(schedule) - 1)]


@dataclass
class _Chunk:
    """One window of one sequence: the last ``n_scored`` tokens of ``ids`` are scored."""

    item: int
    ids: list[int]
    n_scored: int
    first: int  # index (into the sequence's logprobs) of this window's first scored token


DOCUMENT_SEPARATOR = "<|endoftext|>"


def context_ids(tokenizer) -> list[int]:
    """The token prepended so the first token is scored.

    ``<|endoftext|>`` when the vocabulary has it (the separator between training documents
    of GPT-2, SmolLM, Qwen, StarCoder, ...: an instruct model's BOS may be a chat token such
    as ``<|im_start|>``, which makes the first tokens of plain text look very unlikely), else
    the tokenizer's BOS, else its EOS, else none (then the first token is not scored).
    """
    separator = tokenizer.get_vocab().get(DOCUMENT_SEPARATOR)
    for token_id in (separator, tokenizer.bos_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return [int(token_id)]
    return []


def _windows(item: int, full: list[int], window: int, stride: int) -> list[_Chunk]:
    """Cut ``full`` (context + tokens) into windows; every position from 1 on is scored once."""
    if len(full) < 2:
        return []
    chunks, begin, done = [], 0, 1
    while True:
        end = min(begin + window, len(full))
        chunks.append(_Chunk(item, full[begin:end], end - done, done - 1))
        if end == len(full):
            return chunks
        done, begin = end, begin + stride


def _forward(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The model's logits (batch, length, vocab). Tests replace this to count calls or fake OOM."""
    return model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def _score_batch(lm: ScoredModel, batch: list[_Chunk], samplers: Sequence[Sampler],
                 pad_id: int) -> list[list[np.ndarray]]:
    """Each window's scored log-probabilities under each sampler, from one forward pass."""
    length = max(len(c.ids) for c in batch)
    ids = torch.full((len(batch), length), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, chunk in enumerate(batch):
        ids[row, : len(chunk.ids)] = torch.tensor(chunk.ids)
        mask[row, : len(chunk.ids)] = 1
    ids, mask = ids.to(lm.device), mask.to(lm.device)
    logits = _forward(lm.model, ids, mask)[:, :-1].float()  # position p predicts token p + 1
    targets = ids[:, 1:].unsqueeze(-1)
    outs = [_sampler_logprobs(logits, targets, batch, s).cpu().numpy() for s in samplers]
    return [[out[row, len(c.ids) - 1 - c.n_scored : len(c.ids) - 1] for out in outs]
            for row, c in enumerate(batch)]


def _sampler_logprobs(logits: torch.Tensor, targets: torch.Tensor, batch: list[_Chunk],
                      sampler: Sampler) -> torch.Tensor:
    """log λ(target | before) under ``sampler`` for every position (see ``Sampler``)."""
    if not sampler.is_plain:
        temps = np.ones(logits.shape[:2])
        for row, c in enumerate(batch):
            temps[row, len(c.ids) - 1 - c.n_scored : len(c.ids) - 1] = sampler.temperatures(c.first, c.n_scored)
        logits = logits / torch.as_tensor(temps, dtype=logits.dtype, device=logits.device).unsqueeze(-1)
    target_logits = logits.gather(-1, targets).squeeze(-1)
    outside = None
    if sampler.top_k is not None and sampler.top_k < logits.shape[-1]:
        kth = logits.topk(sampler.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
        outside = target_logits < kth.squeeze(-1)
    logprobs = target_logits - torch.logsumexp(logits, dim=-1)
    if outside is not None:
        logprobs = logprobs.masked_fill(outside, float("-inf"))
    return logprobs


def _is_oom(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text


def _token_budget(lm: ScoredModel) -> int:
    """How many window tokens one batch may hold so that its logits fit in memory."""
    vocab = max(int(getattr(lm.model.config, "vocab_size", 0) or 0), lm.card.vocab_size)
    budget = CPU_LOGITS_BUDGET
    if lm.device.type == "cuda":
        budget = int(torch.cuda.mem_get_info(lm.device)[0] * GPU_FREE_FRACTION)
    return max(1, budget // (vocab * 4 * 3))


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _checked_arrays(lm: ScoredModel, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """The sequences as int64 arrays; a ``UserError`` for a token id outside the vocabulary."""
    vocab = max(int(getattr(lm.model.config, "vocab_size", 0) or 0), lm.card.vocab_size)
    arrays = [np.asarray(seq, dtype=np.int64).reshape(-1) for seq in sequences]
    for arr in arrays:
        if arr.size and (arr.min() < 0 or arr.max() >= vocab):
            raise UserError(f"token id {int(arr.max() if arr.max() >= vocab else arr.min())} is outside "
                            f"the model's vocabulary (0..{vocab - 1})")
    return arrays


def _window_and_stride(lm: ScoredModel, window: int | None, stride: int | None) -> tuple[int, int]:
    """The window (default: the context, capped) and stride (default: half of it), checked."""
    window = window or min(lm.card.context_length, MAX_WINDOW)
    stride = stride or max(1, window // 2)
    if window < 2 or not 1 <= stride < window:
        raise UserError(f"window must be >= 2 and stride in 1..window-1 (got window={window}, stride={stride})")
    return window, stride


def _score_chunks(lm: ScoredModel, chunks: list[_Chunk], samplers: Sequence[Sampler], pad_id: int, *,
                  batch_size: int | None, collect: Callable[[_Chunk, list[np.ndarray]], None],
                  progress: Progress | None, cancel: threading.Event | None) -> None:
    """Score the windows longest first, in batches sized to memory (halved on out-of-memory),
    handing each window's log-probabilities (one array per sampler) to ``collect``."""
    chunks.sort(key=lambda c: len(c.ids), reverse=True)
    total_tokens = sum(c.n_scored for c in chunks) or 1
    cap, budget = batch_size or MAX_BATCH, (None if batch_size else _token_budget(lm))
    done_tokens, pos = 0, 0
    while pos < len(chunks):
        if cancel is not None and cancel.is_set():
            raise Cancelled("scoring cancelled")
        n = min(cap, len(chunks) - pos)
        if budget is not None:
            n = max(1, min(n, budget // len(chunks[pos].ids)))
        batch = chunks[pos : pos + n]
        try:
            with torch.inference_mode():
                outputs = _score_batch(lm, batch, samplers, pad_id)
        except RuntimeError as err:
            if not _is_oom(err):
                raise
            _free(lm.device)
            if n == 1:
                raise UserError(f"out of memory scoring one window of {len(batch[0].ids)} tokens on "
                                f"{lm.device}: use a smaller window, or the CPU") from None
            cap = n // 2
            continue
        for chunk, logprobs in zip(batch, outputs):
            collect(chunk, logprobs)
        pos += n
        done_tokens += sum(c.n_scored for c in batch)
        if progress is not None:
            progress(done_tokens / total_tokens, f"scored {done_tokens} of {total_tokens} tokens")


def score_under_samplers(
    lm: ScoredModel,
    sequences: Sequence[Sequence[int]],
    samplers: Sequence[Sampler | None],
    *,
    add_bos: bool = True,
    batch_size: int | None = None,
    window: int | None = None,
    stride: int | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    texts: Sequence[str | None] | None = None,
) -> list[list[SequenceScores]]:
    """Per-token log-probabilities of token-id sequences under each of ``samplers`` (None: the
    model's own distribution), all from one forward pass per window: ``result[j][i]`` is
    sequence ``i`` under ``samplers[j]``. Options as for ``score_token_ids``."""
    wanted = [sampler or Sampler() for sampler in samplers]
    unique = list(dict.fromkeys(wanted))
    arrays = _checked_arrays(lm, sequences)
    window, stride = _window_and_stride(lm, window, stride)
    if batch_size is not None and batch_size < 1:
        raise UserError(f"batch size must be >= 1, not {batch_size}")
    context = context_ids(lm.tokenizer) if add_bos else []
    store = ScoreStore(lm, tuple(context), window, stride, first_scored=0 if context else 1)
    found = {sampler: store.lookup(sampler, arrays) for sampler in unique}
    pending: dict[bytes, list[int]] = {}  # one computation for repeated sequences
    for i, arr in enumerate(arrays):
        if any(found[sampler][i] is None for sampler in unique):
            pending.setdefault(arr.tobytes(), []).append(i)
    try:
        _score_pending(lm, arrays, list(pending.values()), context, window, stride, store, found,
                       batch_size=batch_size, progress=progress, cancel=cancel)
    finally:
        store.flush()  # finished sequences are kept, even when cancelled
    texts = list(texts) if texts is not None else [None] * len(arrays)
    return [[replace(found[sampler][i], text=texts[i]) for i in range(len(arrays))]
            for sampler in wanted]


def _score_pending(lm: ScoredModel, arrays: list[np.ndarray], groups: list[list[int]],
                   context: list[int], window: int, stride: int, store: ScoreStore,
                   found: dict[Sampler, list[SequenceScores | None]], *,
                   batch_size: int | None, progress: Progress | None,
                   cancel: threading.Event | None) -> None:
    """Score each group of equal sequences once under every sampler of ``found``; cache the
    results and fill them into ``found`` as each sequence's last window is done."""
    samplers = list(found)
    chunks = [c for u, group in enumerate(groups)
              for c in _windows(u, context + arrays[group[0]].tolist(), window, stride)]
    pieces: list[list[tuple[int, list[np.ndarray]]]] = [[] for _ in groups]
    remaining = [0] * len(groups)
    for chunk in chunks:
        remaining[chunk.item] += 1

    def finish(u: int) -> None:
        ordered = [p for _, p in sorted(pieces[u], key=lambda fp: fp[0])]
        for j, sampler in enumerate(samplers):
            logprobs = np.concatenate([p[j] for p in ordered] or [np.zeros(0)])
            scores = store.put(sampler, arrays[groups[u][0]], logprobs)
            for i in groups[u]:
                found[sampler][i] = scores

    def collect(chunk: _Chunk, logprobs: list[np.ndarray]) -> None:
        pieces[chunk.item].append((chunk.first, logprobs))
        remaining[chunk.item] -= 1
        if remaining[chunk.item] == 0:
            finish(chunk.item)

    for u in range(len(groups)):
        if remaining[u] == 0:
            finish(u)
    pad_id = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else (context or [0])[0]
    _score_chunks(lm, chunks, samplers, pad_id, batch_size=batch_size, collect=collect,
                  progress=progress, cancel=cancel)


def score_token_ids(lm: ScoredModel, sequences: Sequence[Sequence[int]], *,
                    sampler: Sampler | None = None, **options) -> list[SequenceScores]:
    """Per-token log-probabilities of token-id sequences under ``lm``, in the order given.

    Options: ``add_bos`` (default True: a context token is prepended so the first token is
    scored); ``batch_size`` caps the windows per batch (default: sized to memory, at most 64);
    ``window``/``stride`` control long sequences (default: the model's context capped at
    1024, half of it). ``progress(fraction, message)`` is called after each batch; when
    ``cancel`` is set, ``Cancelled`` is raised (finished sequences stay cached); ``texts`` are
    attached to the results.
    """
    return score_under_samplers(lm, sequences, [sampler], **options)[0]


def score_texts(lm: ScoredModel, texts: Sequence[str], **options) -> list[SequenceScores]:
    """Per-token log-probabilities of ``texts`` (tokenised without special tokens); see
    ``score_token_ids`` for the options."""
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
        raise UserError("texts must be strings")
    ids = lm.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    return score_token_ids(lm, ids, texts=texts, **options)
