"""Decoding steps replayed as one CUDA graph on a static KV cache, for generation on a GPU.

A decoding step of a 30-layer transformers model launches ~1,000 kernels of a few microseconds
each; eager PyTorch spends ~40 µs of host time on each, so a step takes ~40 ms of which the
H100 is busy ~4 ms (``bench.gpu_profile``: the GPU busy 11% of the wall time, in transformers'
``generate`` as in ours). Captured once as a CUDA graph, a step is one launch, and the GPU sets
the pace (``core.generation.graphed`` records the draw in the same graph). A graph replays
fixed shapes at fixed addresses, so:

- the cache is transformers' ``StaticCache`` (``max_len`` slots per row, written in place);
- the rows are fixed: a finished sample stays in the batch (its tokens are discarded);
- the attention mask is ours, 4-D, over the cache's slots: slot j is read at position p iff
  j ≤ p (transformers returns a 4-D mask as given), so no host-side mask logic runs;
- the position is a tensor on the device that the graph itself advances.

The step is not compiled: ``torch.compile`` of it (fused kernels inside the graph) took a
replay of SmolLM2-135M at batch 256 on the H100 from 5.19 to 4.76 ms only, and its samples
were not the same from one run to the next with one seed (``bench.gpu_decode_probe``).

What this relies on in transformers (``StaticCache(config=..., max_cache_len=...)`` written at
its own running length, a 4-D float mask passed through, ``position_ids`` honoured) is pinned
by ``tests/core/test_decode_graph.py``, which runs the same steps eagerly on the CPU against the
dynamic cache. Generation uses this on CUDA for models that declare full-graph support and have
no sliding-window layers (``graphable``); anything else decodes eagerly.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from transformers import StaticCache

_REFUSED: weakref.WeakSet = weakref.WeakSet()   # models whose capture failed: eager from then on


def graphable(model: torch.nn.Module, device: torch.device) -> bool:
    """Whether decoding ``model`` on ``device`` goes through a CUDA graph."""
    config = model.config
    sliding = getattr(config, "sliding_window", None) or any(
        "sliding" in str(t) or "chunked" in str(t) for t in getattr(config, "layer_types", None) or ())
    return (device.type == "cuda" and getattr(model, "_can_compile_fullgraph", False)
            and not sliding and model not in _REFUSED)


def refuse(model: torch.nn.Module) -> None:
    """Decode ``model`` eagerly from now on (its capture failed)."""
    _REFUSED.add(model)


class StaticDecoder:
    """``rows`` rows of at most ``max_len`` tokens decoded on a static cache: ``prefill`` reads
    the prompts (eagerly), then each ``advance`` reads the token in ``ids`` of every row at
    the next position and returns the next-token logits: the forward pass a graph records."""

    def __init__(self, model: torch.nn.Module, rows: int, max_len: int):
        self._model, self.rows, self.max_len = weakref.ref(model), rows, max_len
        device = next(model.parameters()).device
        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self.ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.position = torch.zeros((1, 1), dtype=torch.long, device=device)
        self.slots = torch.arange(max_len, device=device)

    @property
    def model(self) -> torch.nn.Module:
        """The model decoded (held weakly: a decoder kept for it does not keep it loaded)."""
        return self._model()

    def _mask(self, positions: torch.Tensor) -> torch.Tensor:
        """(rows, 1, queries, max_len): 0 where slot j ≤ the query's position, else the dtype's
        lowest value (an additive mask, as every attention implementation takes it)."""
        dtype = self.model.dtype
        allowed = self.slots.view(1, -1) <= positions.view(-1, 1)
        mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
        mask = mask.masked_fill(~allowed, torch.finfo(dtype).min)
        return mask.view(1, 1, *allowed.shape).expand(self.rows, 1, *allowed.shape)

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=ids, position_ids=positions.view(1, -1),
                         attention_mask=self._mask(positions), past_key_values=self.cache,
                         use_cache=True, logits_to_keep=1)
        return out.logits[:, -1]

    def prefill(self, prompt: torch.Tensor) -> torch.Tensor:
        """Empty the cache and read ``prompt`` (rows, length): the logits after its last token."""
        self.cache.reset()
        length = prompt.shape[1]
        logits = self._forward(prompt, torch.arange(length, device=prompt.device))
        self.position.fill_(length)
        return logits

    def advance(self) -> torch.Tensor:
        """Read ``ids`` at the next position: the logits after them."""
        logits = self._forward(self.ids, self.position.view(1))
        self.position.add_(1)
        return logits

    def rewind(self, position: torch.Tensor) -> None:
        """Set the next position (ours and the cache's running lengths) back to ``position``."""
        self.position.copy_(position)
        for layer in self.cache.layers:
            layer.cumulative_length.copy_(position.view(()))


def capture(step: Callable[[], Any], save: Callable[[], Any],
            restore: Callable[[Any], None]) -> torch.cuda.CUDAGraph:
    """``step`` recorded as a CUDA graph: two eager warm-up steps first (on a side stream, as
    PyTorch asks), each undone by ``restore(save())``, as is the recording, so the state is as
    it was before the call."""
    state = save()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            restore(state)
            step()
    torch.cuda.current_stream().wait_stream(stream)
    restore(state)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    restore(state)
    return graph
