"""Sampling on a GPU with each whole decoding step (the forward pass, the draw, the bookkeeping)
replayed as one CUDA graph (``core.models.decode_graph``), so the host launches one graph per
token and learns how many samples ended only every ``REPORT_EVERY`` steps.

Nothing in a step waits for the host, so the draw cannot branch on the logits: it samples the
``Sampler``'s density (``warped_logits``: z/β, −inf outside T_k, the nucleus) by inverse
transform over the whole vocabulary, token = the first whose cumulative probability exceeds
u · Σp, with u ~ U[0, 1) drawn for every row and step before the chunk starts (a seeded
generator, so a seed gives the same samples). This is exact for any sampler, ties with the
k-th logit included, where the eager path's top-2k shortcut needs a check on the host.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import torch

from core.models import LoadedModel
from core.models.decode_graph import StaticDecoder, capture
from core.runtime import is_cancelled
from core.scoring import Sampler
from core.scoring.readouts import warped_logits

REPORT_EVERY = 16  # generated tokens between the host's looks at how many samples ended


def inverse_cdf_draw(logits: torch.Tensor, sampler: Sampler, beta: torch.Tensor,
                     uniform: torch.Tensor) -> torch.Tensor:
    """One token per row of ``logits`` (rows, vocab) from ``sampler``'s density at temperature
    ``beta`` (a one-element tensor), by inverse transform with ``uniform`` (rows,) in [0, 1);
    no step depends on a value read back by the host."""
    probs = torch.softmax(warped_logits(logits.float(), sampler, beta), dim=-1)
    cdf = probs.cumsum(-1)
    drawn = torch.searchsorted(cdf, (uniform * cdf[:, -1]).unsqueeze(-1), right=True).squeeze(-1)
    return torch.where(drawn < probs.shape[-1], drawn, probs.argmax(-1))  # u·Σp rounded up to Σp


class GraphedSampling:
    """The buffers of one chunk shape (rows, prompt length, steps) and its recorded step: the
    generated ids, which rows ended, the step index, the pre-drawn uniforms and β per step."""

    def __init__(self, lm: LoadedModel, sampler: Sampler, rows: int, length: int, steps: int,
                 stops: list[int]):
        device = lm.device
        self.decoder = StaticDecoder(lm.model, rows, length + steps)
        self.sampler, self.first_stop = sampler, stops[0]
        self.stops = torch.tensor(stops, device=device)
        self.out = torch.full((rows, steps), stops[0], dtype=torch.long, device=device)
        self.ended = torch.zeros(rows, dtype=torch.bool, device=device)
        self.index = torch.zeros(1, dtype=torch.long, device=device)
        self.uniforms = torch.zeros((steps, rows), dtype=torch.float32, device=device)
        self.betas = torch.tensor(sampler.temperatures(0, steps), dtype=torch.float32, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None

    def start(self, prompt: torch.Tensor, seed: int) -> None:
        """Read ``prompt`` and draw the first token of every row."""
        generator = torch.Generator(device=self.out.device).manual_seed(seed)
        self.uniforms.copy_(torch.rand(self.uniforms.shape, generator=generator,
                                       device=self.out.device))
        self.out.fill_(self.first_stop)
        self.ended.zero_()
        self.index.zero_()
        self._record(self.decoder.prefill(prompt))

    def _record(self, logits: torch.Tensor) -> None:
        """Draw token ``index`` of every row from ``logits``, write it (the first stop id once a
        row has ended) and feed it to the next step."""
        tokens = inverse_cdf_draw(logits, self.sampler, self.betas.index_select(0, self.index),
                                  self.uniforms.index_select(0, self.index).view(-1))
        tokens = tokens.masked_fill(self.ended, self.first_stop)
        self.out.index_copy_(1, self.index, tokens.view(-1, 1))
        self.ended |= (tokens.unsqueeze(-1) == self.stops).any(-1)   # isin may sort: a sync
        self.decoder.ids.copy_(tokens.view(-1, 1))
        self.index.add_(1)

    def _advance(self) -> None:
        self._record(self.decoder.advance())

    def step(self) -> None:
        """Draw the next token of every row: a graph replay once ``record`` has run."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self._advance()

    def record(self) -> None:
        """Record ``step`` as a CUDA graph (right after ``start``)."""
        self.graph = capture(self._advance, self._save, self._restore)

    def _save(self) -> tuple[torch.Tensor, ...]:
        return (self.decoder.position.clone(), self.index.clone(), self.ended.clone(),
                self.out.clone(), self.decoder.ids.clone())

    def _restore(self, state: tuple[torch.Tensor, ...]) -> None:
        position, index, ended, out, ids = state
        self.decoder.rewind(position)
        self.index.copy_(index)
        self.ended.copy_(ended)
        self.out.copy_(out)
        self.decoder.ids.copy_(ids)


_RUNS: weakref.WeakKeyDictionary[torch.nn.Module, dict] = weakref.WeakKeyDictionary()


def graph_runs(model: torch.nn.Module) -> dict:
    """Where ``model``'s recorded chunk shape stays between ``generate`` calls (one at a time:
    its static cache holds GPU memory), so a second call does not record again. Kept beside
    the model, which the decoder holds weakly, so the model still copies and unloads."""
    return _RUNS.setdefault(model, {})


def sample_graphed(lm: LoadedModel, sampler: Sampler, prompt: torch.Tensor, *, steps: int,
                   seed: int, stops: list[int], on_step: Callable[[int, int], None],
                   cancel: threading.Event | None) -> torch.Tensor:
    """``sampling.sample_chunk`` as graph replays: every row stays in the batch (a finished
    one's tokens are left at ``stops[0]``); the model keeps the recorded chunk shape for the
    next chunk of the same shape (``graph_runs``)."""
    rows, length = prompt.shape
    decoders = graph_runs(lm.model)
    key = (rows, length, steps, sampler, tuple(stops))
    if key not in decoders:   # one capture per shape, reused by the chunks of the same shape
        decoders.clear()
        decoders[key] = GraphedSampling(lm, sampler, rows, length, steps, stops)
    run = decoders[key]
    run.start(prompt, seed)
    if run.graph is None:
        run.record()
    for step in range(1, steps + 1):
        if step % REPORT_EVERY == 0 or step == steps:
            count = int(run.ended.sum())
            on_step(step, count)
            if count == rows or is_cancelled(cancel):
                break
        if step < steps:
            run.step()
    return run.out.clone()
