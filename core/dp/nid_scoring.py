"""The tokens of an identifier in its context, and their log-probability under a model: what
``nid-audit`` scores (``core.dp.nid_audit``)."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from core.errors import UserError
from core.models import LoadedModel
from core.runtime import Progress
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


def identifier_logprobs(lm: LoadedModel, sequences: list[list[int]], lengths: list[int], *,
                        progress: Progress, cancel: threading.Event | None) -> np.ndarray:
    """log p(identifier tokens | context) of each sequence: the sum of its last ``lengths``
    token scores (natural log; the engine prepends a context token, so every token is scored)."""
    scores = score_token_ids(lm, sequences, progress=progress, cancel=cancel)
    return np.array([s.logprobs[len(s.logprobs) - n:].sum(dtype=np.float64)
                     for s, n in zip(scores, lengths)])
