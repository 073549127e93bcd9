"""The one adapter around transformers' KV cache: everything beam search needs of its internals.

A decoder's KV cache holds, for every layer, the keys and values of the tokens read so far, each of
shape ``(rows, heads, tokens, head_dim)``. Beam search keeps them as plain tensors (``KVRows``) so
that it can take some rows (the kept beams), put together the rows of several chunks and read on
from any of them::

    logits, rows = forward_with_cache(model, ids, None)          # read ids, keep their cache
    rows = KVRows.cat([rows, more]).take(parents)                # the kept beams' rows
    logits, rows = forward_with_cache(model, next_ids, rows)     # one more token per row

Generation instead lets one cache grow in place and drops the rows of finished samples::

    cache = growing_cache(model)                                  # filled by each forward
    model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
    keep_rows(cache, still_going)                                 # the others leave the batch

What it relies on in transformers, pinned by ``tests/core/test_kv_cache.py`` so that an upgrade that
changes it fails loudly: ``DynamicCache()`` filled layer by layer with ``update(keys, values,
layer)``; a forward with ``past_key_values`` and an attention mask over past and new tokens reads
on from the cache and returns the extended cache, whose ``layers`` have ``keys`` / ``values`` in
``(rows, heads, tokens, head_dim)`` layout; the tensors handed in are not changed in place;
``batch_select_indices`` keeps some rows of every layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache


@dataclass(frozen=True)
class KVRows:
    """Per layer, the (keys, values) of some rows: tensors of shape (rows, heads, tokens, dim)."""

    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]

    @classmethod
    def from_cache(cls, cache) -> KVRows:
        """The tensors a forward's ``past_key_values`` holds."""
        return cls(tuple((layer.keys, layer.values) for layer in cache.layers))

    def to_cache(self) -> DynamicCache:
        """A fresh cache holding these rows, to read on from."""
        cache = DynamicCache()
        for index, (keys, values) in enumerate(self.layers):
            cache.update(keys, values, index)
        return cache

    def __len__(self) -> int:
        return self.layers[0][0].shape[0]

    @property
    def tokens(self) -> int:
        """How many tokens each row has read."""
        return self.layers[0][0].shape[2]

    def take(self, rows: slice | torch.Tensor) -> KVRows:
        """The given rows (a slice, or row indices in any order, repeats allowed)."""
        if isinstance(rows, torch.Tensor):
            rows = rows.to(self.layers[0][0].device)
        return KVRows(tuple((keys[rows], values[rows]) for keys, values in self.layers))

    @staticmethod
    def cat(parts: list[KVRows]) -> KVRows:
        """The rows of ``parts``, one after the other."""
        return KVRows(tuple((torch.cat([k for k, _ in layer]), torch.cat([v for _, v in layer]))
                            for layer in zip(*(part.layers for part in parts))))


def forward_with_cache(model: torch.nn.Module, input_ids: torch.Tensor,
                       past: KVRows | None) -> tuple[torch.Tensor, KVRows]:
    """Logits (rows, new tokens, vocabulary) of ``input_ids`` read after ``past`` (None: from the
    start, no padding), and each row's cache extended by them."""
    seen = 0 if past is None else past.tokens
    mask = torch.ones((input_ids.shape[0], seen + input_ids.shape[1]), dtype=torch.long,
                      device=input_ids.device)
    out = model(input_ids=input_ids, attention_mask=mask, use_cache=True,
                past_key_values=None if past is None else past.to_cache())
    return out.logits, KVRows.from_cache(out.past_key_values)


def growing_cache(model: torch.nn.Module) -> DynamicCache:
    """An empty cache that forwards fill and extend in place (with the sliding-window layers
    the model's config asks for)."""
    return DynamicCache(config=model.config)


def keep_rows(cache: DynamicCache, rows: torch.Tensor) -> None:
    """Keep only ``rows`` (indices, in order) of every layer of ``cache``, in place."""
    cache.batch_select_indices(rows)
