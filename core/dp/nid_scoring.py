"""The tokens of an identifier in its context, and their log-probability under a model: what
``nid-audit`` scores (``core.dp.nid_audit``), in a plain text or a rendered row
(``core.dp.nid_corpus``)."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from core.errors import UserError
from core.models import LoadedModel
from core.runtime import Progress, share
from core.scoring import score_token_ids

CHARS_PER_TOKEN = 32   # characters of context kept per context token (a token is rarely longer)


def identifier_sequences(tokenizer, places: Sequence[tuple[str, str]],
                         context_tokens: int) -> tuple[list[list[int]], list[int]]:
    """For each (text before, identifier): the tokens of ``before + identifier`` from up to
    ``context_tokens`` tokens before the identifier's first token, and how many of them are the
    identifier's (the tokens that overlap its characters: a space merged into its first token
    comes with it). The identifier is tokenised in its place, as training read it."""
    if not getattr(tokenizer, "is_fast", False):
        raise UserError("the model's tokenizer gives no character offsets (not a fast "
                        "tokenizer): the identifier's tokens cannot be found in their context")
    keep = max(1, context_tokens) * CHARS_PER_TOKEN
    starts = [min(len(before), keep) for before, _ in places]
    texts = [before[len(before) - start:] + value for (before, value), start in zip(places, starts)]
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    sequences, lengths = [], []
    for ids, offsets, start in zip(encoded["input_ids"], encoded["offset_mapping"], starts):
        first = next(i for i, (_, end) in enumerate(offsets) if end > start)
        sequences.append(ids[max(0, first - context_tokens):])
        lengths.append(len(ids) - first)
    return sequences, lengths


def row_sequences(tokenizer, places: Sequence[tuple[str, int, int, str]]
                  ) -> tuple[list[list[int]], list[int]]:
    """For each (rendered row, start, length, value): the row with ``value`` in place of its
    characters ``start:start + length``, tokenised whole without special tokens (as the
    template holds them, as training read it) and cut after the last token that overlaps the
    value; and how many of its tokens do (the value's, scored after the row before them; the
    row's first token, which has no context, never among them)."""
    texts = [text[:start] + value + text[start + n:] for text, start, n, value in places]
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    sequences, lengths = [], []
    for ids, offsets, (_, start, _, value) in zip(encoded["input_ids"], encoded["offset_mapping"],
                                                  places):
        inside = [i for i, (lo, hi) in enumerate(offsets) if lo < start + len(value) and hi > start]
        sequences.append(ids[:inside[-1] + 1])
        lengths.append(len(inside) - (inside[0] == 0))
    return sequences, lengths


def identifier_logprobs(lm: LoadedModel, sequences: list[list[int]], lengths: list[int], *,
                        progress: Progress, cancel: threading.Event | None,
                        context: Sequence[bool] | None = None) -> np.ndarray:
    """log p(identifier tokens | context) of each sequence: the sum of its last ``lengths``
    token scores (natural log). Where ``context`` is True (the default: plain texts) the
    engine prepends a context token, so every token is scored; elsewhere (a rendered row,
    which starts with its template's own token) the first token is the context."""
    context = [True] * len(sequences) if context is None else list(context)
    groups = [[i for i, c in enumerate(context) if c == flag] for flag in (True, False)]
    groups = [(flag, index) for flag, index in zip((True, False), groups) if index]
    out = np.zeros(len(sequences))
    for k, (flag, index) in enumerate(groups):
        scores = score_token_ids(lm, [sequences[i] for i in index], add_bos=flag, cancel=cancel,
                                 progress=share(progress, k / len(groups),
                                                (k + 1) / len(groups)))
        for i, s in zip(index, scores):
            out[i] = s.logprobs[len(s.logprobs) - lengths[i]:].sum(dtype=np.float64)
    return out
