"""Sampling many documents from a language model with a given ``Sampler`` (Carlini et al. 2021).

Each sample is one document: it starts from the end-of-text context token (after an optional
prompt, e.g. a prefix of a real document) and stops at the next end-of-text or after a number
of tokens. Batches of prompts of one length are sampled step by step on the model's KV cache
with the very density the scoring engine gives for the ``Sampler`` (``warped_logits``: logits
z become z/β_i, and −inf outside the top-k; Stock et al. 2022, §3.2). A sample that reaches
end-of-text leaves the batch and its cache at once, so a batch costs the tokens its samples
have, not its size times its longest sample's length: transformers' ``generate`` keeps
finished rows until the last one ends, which takes 3.8x as long on the demo's samples (most
end after ~35 of 255 tokens; ``bench.bench_generation``, see docs/benchmarks.md).
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from core.errors import UserError
from core.models import LoadedModel
from core.generation.graphed import REPORT_EVERY, sample_graphed
from core.models.decode_graph import graphable, refuse
from core.models.kv_cache import growing_cache, keep_rows
from core.runtime import Progress, is_cancelled, no_progress
from core.scoring import Sampler, context_ids
from core.scoring.readouts import warped_logits
from core.scoring.threads import is_small_on_cpu, one_thread

logger = logging.getLogger(__name__)
PARTIAL_EVERY_BATCHES = 4  # generated batches between partial results (SampleLog)


def decaying_schedule(start: float, tokens: int, end: float = 1.0) -> tuple[float, ...]:
    """β_i decreasing linearly from ``start`` to ``end`` over the first ``tokens`` tokens, then
    ``end`` (Carlini et al.: 10 to 1 over 20 tokens)."""
    return tuple(float(t) for t in np.linspace(start, end, max(tokens, 1)))


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


def _chunks(prompts: list[list[int]], batch_size: int) -> list[list[int]]:
    """Indices of ``prompts`` in batches of at most ``batch_size`` prompts of one length."""
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, prompt in enumerate(prompts):
        by_length[len(prompt)].append(i)
    return [idx[s: s + batch_size] for _, idx in sorted(by_length.items())
            for s in range(0, len(idx), batch_size)]


def _step_reporter(progress: Progress, done: int, size: int, total: int, steps: int):
    """Progress every REPORT_EVERY tokens of a chunk of ``size`` samples after ``done`` others,
    counting the samples of the chunk that have ended."""
    def on_step(step: int, ended: int) -> None:
        if step % REPORT_EVERY == 0:
            progress(min((done + ended) / total, 1.0), f"samples {done + 1}-{done + size} of "
                     f"{total}: token {step} of {steps}, {ended} of {size} ended")
    return on_step


def _keeps_last_logits(model: torch.nn.Module) -> dict:
    """``logits_to_keep=1`` where the model takes it (the prompt's other positions need no
    vocabulary-sized rows), as ``generate`` does."""
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


def sample_chunk(lm: LoadedModel, sampler: Sampler, prompt: torch.Tensor, *, steps: int, seed: int,
                 stops: list[int], on_step: Callable[[int, int], None],
                 cancel: threading.Event | None) -> torch.Tensor:
    """One batch of samples after ``prompt`` (rows of one length): the generated ids (rows,
    ``steps``), each row's tokens after its first stop id left at ``stops[0]``. On a GPU, as
    CUDA-graph replays where the model allows (``core.generation.graphed``, which keeps the
    recorded step for the next chunk of the same shape), else eagerly."""
    if graphable(lm.model, lm.device):
        try:
            return sample_graphed(lm, sampler, prompt, steps=steps, seed=seed, stops=stops,
                                  on_step=on_step, cancel=cancel)
        except Exception as err:  # noqa: BLE001 - a capture the model refuses: decode eagerly
            if isinstance(err, torch.OutOfMemoryError):
                raise
            logger.warning("decoding %s eagerly: its CUDA graph failed (%s)", lm.name, err)
            refuse(lm.model)
    return _sample_eager(lm, sampler, prompt, steps=steps, seed=seed, stops=stops,
                         on_step=on_step, cancel=cancel)


def _draw(logits: torch.Tensor, sampler: Sampler, step: int,
          generator: torch.Generator) -> torch.Tensor:
    """One token per row from ``sampler``'s density at generated token ``step``: from its top
    k alone where that is the same density (``_draw_top_k``), else from the whole vocabulary."""
    temperature = torch.tensor(float(sampler.temperatures(step, 1)[0]), device=logits.device)
    logits = logits.float()
    if sampler.top_k is not None and 2 * sampler.top_k < logits.shape[-1]:
        drawn = _draw_top_k(logits / temperature, sampler.top_k, generator)
        if drawn is not None:
            return drawn
    probs = torch.softmax(warped_logits(logits, sampler, temperature), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def _draw_top_k(scaled: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor | None:
    """One token per row among the k largest ``scaled`` logits and every one tied with the k-th
    (``warped_logits``' set T_k), sampled from the softmax over them alone: the sampler's very
    density, at the cost of a top-2k and a draw among 2k instead of a softmax and a draw over
    the whole vocabulary (a quarter of SmolLM2's generation time went to that draw). None when ties with the
    k-th reach past the 2k kept (bf16 logits tie often): then the whole vocabulary is needed."""
    values, ids = scaled.topk(2 * k, dim=-1)
    kth = values[:, k - 1: k]
    if bool((values[:, -1:] >= kth).any()):
        return None
    probs = torch.softmax(values.masked_fill(values < kth, float("-inf")), dim=-1)
    return ids.gather(1, torch.multinomial(probs, 1, generator=generator)).squeeze(1)


def _sample_eager(lm: LoadedModel, sampler: Sampler, prompt: torch.Tensor, *, steps: int, seed: int,
                  stops: list[int], on_step: Callable[[int, int], None],
                  cancel: threading.Event | None) -> torch.Tensor:
    """``sample_chunk`` step by step on a growing cache: each step feeds only the rows still
    going, and drops a finished row from the KV cache."""
    rows, length = prompt.shape
    device = lm.device
    generator = torch.Generator(device=device).manual_seed(seed)
    out = torch.full((rows, steps), stops[0], dtype=torch.long, device=device)
    going, stop_ids_ = torch.arange(rows, device=device), torch.tensor(stops, device=device)
    cache, last_only = growing_cache(lm.model), _keeps_last_logits(lm.model)
    inputs = prompt
    for step in range(steps):
        mask = torch.ones((len(going), length + step), dtype=torch.long, device=device)
        logits = lm.model(input_ids=inputs, attention_mask=mask, past_key_values=cache,
                          use_cache=True, **last_only).logits[:, -1]
        tokens = _draw(logits, sampler, step, generator)
        out[going, step] = tokens
        alive = ~torch.isin(tokens, stop_ids_)
        on_step(step + 1, rows - len(going) + int((~alive).sum()))
        if not alive.any() or is_cancelled(cancel):
            break
        if not alive.all():
            keep = alive.nonzero().squeeze(1)
            keep_rows(cache, keep)
            going, tokens = going[keep], tokens[keep]
        inputs = tokens.unsqueeze(1)
    return out


def generate(lm: LoadedModel, sampler: Sampler, prompts: list[list[int]], *, max_new_tokens: int,
             batch_size: int = 64, seed: int = 0, progress: Progress = no_progress,
             cancel: threading.Event | None = None,
             on_batch: Callable[[list[np.ndarray]], None] | None = None,
             after_context: bool = True, more_stops: tuple[int, ...] = ()) -> Generated:
    """One sample per prompt (token ids after the context token, or, not ``after_context``,
    after the prompt alone: a chat template's prompt holds its own start), drawn from
    ``sampler``, ``batch_size`` prompts of one length at a time.

    Each sample stops at end-of-text (or one of ``more_stops``, e.g. a template's end of
    turn) or after ``max_new_tokens`` (fewer when the model's context is shorter). On cancel,
    the finished chunks are returned with ``stopped_early``. ``on_batch`` receives each
    finished batch's samples (for partial results).
    """
    context = context_ids(lm.tokenizer) if after_context else []
    if not context and not all(prompts):
        raise UserError(f"{lm.name} has no end-of-text, BOS or EOS token to start a sample from: "
                        "use the prefix strategy")
    stops = stop_ids(lm) + [i for i in more_stops if i not in stop_ids(lm)]
    out: list[np.ndarray | None] = [None] * len(prompts)
    started, new_tokens, done = time.perf_counter(), 0, 0
    progress(0.0, f"generating {len(prompts)} samples")
    for number, chunk in enumerate(_chunks(prompts, batch_size)):
        if is_cancelled(cancel):
            break
        prompt = torch.tensor([context + list(prompts[i]) for i in chunk], device=lm.device)
        length = prompt.shape[1]
        steps = min(max_new_tokens, lm.card.context_length - length)
        if steps < 1:
            raise UserError(f"a prompt of {length} tokens leaves no room in the model's context "
                            f"of {lm.card.context_length}: use shorter prefixes")
        with torch.inference_mode(), one_thread(is_small_on_cpu(lm.model)):
            rows = sample_chunk(lm, sampler, prompt, steps=steps, seed=seed * 100_003 + number,
                                stops=stops, cancel=cancel,
                                on_step=_step_reporter(progress, done, len(chunk), len(prompts), steps))
        if is_cancelled(cancel):
            break
        for row, i in zip(rows.cpu().numpy(), chunk):
            ends = np.flatnonzero(np.isin(row, stops))
            stop = int(ends[0]) if ends.size else len(row)
            new_tokens += min(stop + 1, len(row))
            out[i] = np.concatenate([np.asarray(prompts[i], dtype=np.int64), row[:stop]])
        done += len(chunk)
        if on_batch is not None:
            on_batch([out[i] for i in chunk])
        progress(done / len(prompts), f"generated {done} of {len(prompts)} samples")
    kept = [i for i, s in enumerate(out) if s is not None]
    return Generated([out[i] for i in kept], [len(prompts[i]) for i in kept], new_tokens,
                     time.perf_counter() - started, len(kept) < len(prompts))


class SampleLog:
    """The samples generated so far, decoded: every ``PARTIAL_EVERY_BATCHES`` batches they become
    a partial result (``base()``, e.g. what finished stages found, plus ``samples_so_far``), so a
    killed run keeps them. Hand ``on_batch(name)`` to ``generate`` and ``snapshot`` to the
    progress callback that reports partial results."""

    def __init__(self, tokenizer, base: Callable[[], dict]):
        self.tokenizer, self.base = tokenizer, base
        self.texts: dict[str, list[str]] = {}
        self.batches, self.due = 0, False

    def on_batch(self, name: str) -> Callable[[list[np.ndarray]], None]:
        def add(samples: list[np.ndarray]) -> None:
            texts = self.texts.setdefault(name, [])
            texts.extend(self.tokenizer.decode(s.tolist()) for s in samples)
            self.batches += 1
            self.due = self.batches % PARTIAL_EVERY_BATCHES == 0
        return add

    def snapshot(self) -> dict | None:
        """The partial result when one is due (once per due batch), else None."""
        if not self.due:
            return None
        self.due = False
        so_far = {name: list(texts) for name, texts in self.texts.items()}
        return self.base() | {"samples_so_far": so_far}


def prefix_prompts(lm: LoadedModel, documents: list[str], n: int, *, shortest: int, longest: int,
                   rng: np.random.Generator) -> list[list[int]]:
    """``n`` prompts: the first L ∈ [shortest, longest] tokens of a random document (the
    paper's "Internet" prefixes)."""
    ids = [d for d in lm.tokenizer(documents, add_special_tokens=False)["input_ids"]
           if len(d) >= shortest]
    if not ids:
        raise UserError(f"no prefix document has {shortest} tokens: give longer texts")
    picks = rng.integers(len(ids), size=n)
    lengths = rng.integers(shortest, longest + 1, size=n)
    return [list(ids[p][:length]) for p, length in zip(picks, lengths)]
