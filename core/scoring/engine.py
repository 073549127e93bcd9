"""The scoring engine: per-token log-probabilities of many sequences under one causal LM.

For a sequence x_1..x_n the engine returns log p(x_i | c, x_<i) for every i, where c is one
context token (``<|endoftext|>`` when the vocabulary has it, else BOS, else EOS: see
``core.scoring.windows.context_ids``) prepended so that the first token is scored too; with ``add_bos=False`` (or a tokenizer with neither) x_1 is context only and x_2..x_n are
scored. How:

- sequences are cut into windows of at most ``window`` tokens (the model's context, capped at
  ``MAX_WINDOW``); a longer one is scored with a sliding window moved by ``stride``: each token
  is scored once, in the first window that holds it, i.e. with the most left context any
  window gives it (the Hugging Face perplexity recipe);
- windows are sorted by length and batched, right-padded with an attention mask, under
  ``torch.inference_mode``. The model's body runs on the batch; its head (the output
  embeddings) and the log-softmax then run on chunks of the scored positions only, so a batch
  is sized to its activations, not to its logits, which exist in float32 one chunk at a time
  (a model whose logits are not simply its head's output is run whole, its batches sized to
  its logits);
- on a GPU, a job large enough to pay for it runs the body and the readouts as compiled,
  fused kernels (``core.scoring.fused``); on the CPU a small model runs on one thread
  (``core.scoring.threads``);
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

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from core.errors import UserError
from core.runtime import CACHE_NOTE, check_cancel
from core.scoring import fused
from core.scoring.pass_size import (GPU_MAX_BATCH, MAX_BATCH, chunk_rows, free, head_splits, is_oom,
                                  token_budget, vocab_size)
from core.scoring.cache import ScoreStore, SequenceScores
from core.scoring.readouts import Moment, Rank, Readout, Sampler
from core.scoring.threads import is_small_on_cpu, one_thread
from core.scoring.windows import Chunk, context_ids, window_and_stride, windows

__all__ = ["CacheTally", "Moment", "Rank", "Readout", "Sampler", "context_ids", "counting_cache",
           "score_texts", "score_token_ids", "score_under_samplers"]


# Where the engine may send its forward passes: lm -> a scorer on other workers, or None (in
# process). ``core.scaleout`` installs its hook when a scale-out block starts; the engine imports
# no scale-out code, so scale-out may load models and score with this engine.
_REMOTE: list[Callable[[Any], Any]] = []


def install_remote_scorer(hook: Callable[[Any], Any]) -> None:
    """Route every later call through ``hook(lm)``: a remote scorer, or None to score here."""
    _REMOTE[:] = [hook]


class ScoredModel(Protocol):
    """What the engine needs of a loaded model (``core.models.LoadedModel`` is one): the
    transformers model and tokenizer, its device, its card (``vocab_size``, ``context_length``)
    and a ``key`` unique per load, for the cache. Optionally ``identity``: the content
    fingerprint of the model's source files (``core.fingerprint``), non-empty only when the
    weights are exactly those files (``core.models.load_model`` sets it), whose scores are then
    also cached on disk."""

    model: torch.nn.Module
    tokenizer: Any
    device: torch.device
    card: Any
    key: str


Progress = Callable[[float, str], None]


def _forward(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """What the model computes before the vocabulary: its body's last hidden states (batch,
    length, hidden) when its head splits off (``budget.head_splits``), else its logits (batch, length,
    vocab). The one seam tests replace to count forward passes or fake OOM."""
    if head_splits(model):
        return fused.body(model, input_ids.shape)(input_ids=input_ids, attention_mask=attention_mask,
                                                  use_cache=False).last_hidden_state
    return model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def _to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``: to a GPU from pinned memory, without blocking the host."""
    if device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def _padded(batch: list[Chunk], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The windows right-padded (ids, attention mask), and the flat indices into (window,
    position) of the positions whose next token is scored, window by window (built in numpy:
    a torch operator per window cost the GPU machine's slow host ~10 µs each)."""
    lengths = np.array([len(c.ids) for c in batch])
    length = int(lengths.max())
    ids = np.full((len(batch), length), pad_id, dtype=np.int64)
    for row, chunk in enumerate(batch):
        ids[row, : len(chunk.ids)] = chunk.ids
    mask = (np.arange(length) < lengths[:, None]).astype(np.int64)
    last = np.arange(len(batch)) * length + lengths - 1  # predicts nothing
    positions = np.concatenate([np.arange(end - c.n_scored, end) for c, end in zip(batch, last)])
    return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(positions)


def _score_batch(lm: ScoredModel, batch: list[Chunk], readouts: Sequence[Readout], pad_id: int,
                 cancel: threading.Event | None = None) -> list[list[np.ndarray]]:
    """Each window's scored values under each readout, from one forward pass of the batch.
    The head and the readouts then run on chunks of the scored positions only, so the logits
    exist only per chunk (and in float32 only there, whatever the weights' dtype); ``cancel``
    is checked between chunks (a large vocabulary's head costs as much as the body)."""
    ids, mask, positions = _padded(batch, pad_id)
    states = _forward(lm.model, _to_device(ids, lm.device), _to_device(mask, lm.device))
    states = states.reshape(-1, states.shape[-1])
    targets = _to_device(ids.reshape(-1)[positions + 1], lm.device)
    temperatures = {r: _to_device(torch.as_tensor(np.concatenate(
        [r.temperatures(c.first, c.n_scored) for c in batch]), dtype=torch.float32), lm.device)
        for r in readouts if isinstance(r, Sampler) and not r.is_plain}
    positions = _to_device(positions, lm.device)
    head = lm.model.get_output_embeddings() if head_splits(lm.model) else torch.nn.Identity()
    values = torch.empty((len(readouts), len(positions)), dtype=torch.float32, device=lm.device)
    step = chunk_rows(lm)
    for begin in range(0, len(positions), step):
        check_cancel(cancel)
        part = slice(begin, begin + step)
        logits = head(states.index_select(0, positions[part]))
        values[:, part] = fused.readouts(lm.model, len(logits))(
            logits, targets[part], readouts, {r: t[part] for r, t in temperatures.items()})
    values = values.cpu().numpy()
    ends = np.cumsum([c.n_scored for c in batch])
    return [[v[end - c.n_scored : end] for v in values] for c, end in zip(batch, ends)]


def _checked_arrays(lm: ScoredModel, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """The sequences as int64 arrays; a ``UserError`` for a token id outside the vocabulary."""
    vocab = vocab_size(lm)
    arrays = [np.asarray(seq, dtype=np.int64).reshape(-1) for seq in sequences]
    for arr in arrays:
        if arr.size and (arr.min() < 0 or arr.max() >= vocab):
            raise UserError(f"token id {int(arr.max() if arr.max() >= vocab else arr.min())} is outside "
                            f"the model's vocabulary (0..{vocab - 1})")
    return arrays


def _score_chunks(lm: ScoredModel, chunks: list[Chunk], samplers: Sequence[Readout], pad_id: int, *,
                  batch_size: int | None, collect: Callable[[Chunk, list[np.ndarray]], None],
                  progress: Progress | None, cancel: threading.Event | None) -> None:
    """Score the windows longest first, in batches of ``budget.token_budget`` tokens (halved on
    out-of-memory), handing each window's log-probabilities (one array per sampler) to
    ``collect``."""
    chunks.sort(key=lambda c: len(c.ids), reverse=True)
    total_tokens = sum(c.n_scored for c in chunks) or 1
    fused.prepare(lm.model, lm.device, total_tokens)
    cap = batch_size or (GPU_MAX_BATCH if lm.device.type == "cuda" else MAX_BATCH)
    budget = None if batch_size else token_budget(lm)
    done_tokens, pos = 0, 0
    while pos < len(chunks):
        check_cancel(cancel)
        n = min(cap, len(chunks) - pos)
        if budget is not None:
            n = max(1, min(n, budget // len(chunks[pos].ids)))
        batch = chunks[pos : pos + n]
        try:
            with torch.inference_mode():
                outputs = _score_batch(lm, batch, samplers, pad_id, cancel)
        except RuntimeError as err:
            if not is_oom(err):
                raise
            free(lm.device)
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


@dataclass
class CacheTally:
    """What the engine was asked while counting (``counting_cache``): sequences, and of them
    those whose scores it read from its cache (memory or disk) instead of the model."""

    sequences: int = 0
    cached: int = 0

    def note(self, figure: str) -> list[str]:
        """A note saying that ``figure`` (e.g. "Users per minute") counts cached scores, if any."""
        return [f"{figure}: {self.cached:,} of the {self.sequences:,} {CACHE_NOTE} (no forward "
                "pass); a run without them takes longer."] if self.cached else []


_TALLIES: ContextVar[tuple[CacheTally, ...]] = ContextVar("score_tallies", default=())


@contextmanager
def counting_cache() -> Iterator[CacheTally]:
    """Count, in this thread's calls of the engine, the sequences scored and the cache hits."""
    tally = CacheTally()
    token = _TALLIES.set(_TALLIES.get() + (tally,))
    try:
        yield tally
    finally:
        _TALLIES.reset(token)


def score_under_samplers(
    lm: ScoredModel,
    sequences: Sequence[Sequence[int]],
    samplers: Sequence[Readout | None],
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
    model's own distribution; a ``Moment``: that statistic of the next-token distribution
    instead), all from one forward pass per window: ``result[j][i]`` is sequence ``i`` under
    ``samplers[j]``. Options as for ``score_token_ids``."""
    wanted = [sampler or Sampler() for sampler in samplers]
    unique = list(dict.fromkeys(wanted))
    arrays = _checked_arrays(lm, sequences)
    window, stride = window_and_stride(lm, window, stride)
    if batch_size is not None and batch_size < 1:
        raise UserError(f"batch size must be >= 1, not {batch_size}")
    context = context_ids(lm.tokenizer) if add_bos else []
    store = ScoreStore(lm, tuple(context), window, stride, first_scored=0 if context else 1)
    found = {sampler: store.lookup(sampler, arrays) for sampler in unique}
    pending: dict[bytes, list[int]] = {}  # one computation for repeated sequences
    for i, arr in enumerate(arrays):
        if any(found[sampler][i] is None for sampler in unique):
            pending.setdefault(arr.tobytes(), []).append(i)
    for tally in _TALLIES.get():
        tally.sequences += len(arrays)
        tally.cached += len(arrays) - sum(map(len, pending.values()))
    groups = list(pending.values())
    remote = _REMOTE[0](lm) if groups and _REMOTE else None
    try:
        if remote is None:
            with one_thread(bool(groups) and is_small_on_cpu(lm.model)):
                _score_pending(lm, arrays, groups, context, window, stride, store, found,
                               batch_size=batch_size, progress=progress, cancel=cancel)
        else:  # on Ray workers, shard by shard; merged below as the batches are
            options = dict(add_bos=add_bos, batch_size=batch_size, window=window, stride=stride)
            values = remote.score([arrays[g[0]] for g in groups], unique, options,
                                  progress=progress, cancel=cancel)
            for group, per_readout in zip(groups, values):
                _record(store, found, arrays, group, per_readout)
    finally:
        store.flush()  # finished sequences are kept, even when cancelled
    texts = list(texts) if texts is not None else [None] * len(arrays)
    return [[replace(found[sampler][i], text=texts[i]) for i in range(len(arrays))]
            for sampler in wanted]


def _record(store: ScoreStore, found: dict[Readout, list[SequenceScores | None]],
            arrays: list[np.ndarray], group: list[int], per_readout: Sequence[np.ndarray]) -> None:
    """Cache one sequence's values (one array per readout of ``found``, in its order) and fill
    them in for each of its copies ``group``."""
    for sampler, logprobs in zip(found, per_readout):
        scores = store.put(sampler, arrays[group[0]], logprobs)
        for i in group:
            found[sampler][i] = scores


def _score_pending(lm: ScoredModel, arrays: list[np.ndarray], groups: list[list[int]],
                   context: list[int], window: int, stride: int, store: ScoreStore,
                   found: dict[Readout, list[SequenceScores | None]], *,
                   batch_size: int | None, progress: Progress | None,
                   cancel: threading.Event | None) -> None:
    """Score each group of equal sequences once under every sampler of ``found``; cache the
    results and fill them into ``found`` as each sequence's last window is done."""
    samplers = list(found)
    chunks = [c for u, group in enumerate(groups)
              for c in windows(u, context + arrays[group[0]].tolist(), window, stride)]
    pieces: list[list[tuple[int, list[np.ndarray]]]] = [[] for _ in groups]
    remaining = [0] * len(groups)
    for chunk in chunks:
        remaining[chunk.item] += 1

    def finish(u: int) -> None:
        ordered = [p for _, p in sorted(pieces[u], key=lambda fp: fp[0])]
        _record(store, found, arrays, groups[u],
                [np.concatenate([p[j] for p in ordered] or [np.zeros(0)]) for j in range(len(samplers))])

    def collect(chunk: Chunk, logprobs: list[np.ndarray]) -> None:
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
    scored); ``batch_size`` caps the windows per batch (default: those that fit in
    ``budget.token_budget`` tokens, 1,024 on the CPU, at most 64); ``window``/``stride`` control
    long sequences (default: the model's context capped at 1024, half of it).
    ``progress(fraction, message)`` is called after each batch; when ``cancel`` is set,
    ``Cancelled`` is raised (finished sequences stay cached); ``texts`` are attached to the
    results.
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
