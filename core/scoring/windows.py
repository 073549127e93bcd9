"""How the engine cuts sequences: the context token prepended so the first token is scored, and
the windows of a sequence longer than the model's context (each position scored once, in the
first window that holds it: the Hugging Face perplexity recipe)."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import UserError

MAX_WINDOW = 1024
DOCUMENT_SEPARATOR = "<|endoftext|>"


@dataclass
class Chunk:
    """One window of one sequence: the last ``n_scored`` tokens of ``ids`` are scored."""

    item: int
    ids: list[int]
    n_scored: int
    first: int  # index (into the sequence's logprobs) of this window's first scored token


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


def windows(item: int, full: list[int], window: int, stride: int) -> list[Chunk]:
    """Cut ``full`` (context + tokens) into windows; every position from 1 on is scored once."""
    if len(full) < 2:
        return []
    chunks, begin, done = [], 0, 1
    while True:
        end = min(begin + window, len(full))
        chunks.append(Chunk(item, full[begin:end], end - done, done - 1))
        if end == len(full):
            return chunks
        done, begin = end, begin + stride


def window_and_stride(lm, window: int | None, stride: int | None) -> tuple[int, int]:
    """The window (default: the context, capped) and stride (default: half of it), checked."""
    window = window or min(lm.card.context_length, MAX_WINDOW)
    stride = stride or max(1, window // 2)
    if window < 2 or not 1 <= stride < window:
        raise UserError(f"window must be >= 2 and stride in 1..window-1 (got window={window}, stride={stride})")
    return window, stride


def shared_window(*models) -> int:
    """The window in which every one of ``models`` (None ones aside) scores the same tokens:
    the smallest context, capped at ``MAX_WINDOW``."""
    return min(min(m.card.context_length for m in models if m is not None), MAX_WINDOW)
