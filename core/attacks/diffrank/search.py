"""The differential-rank searches: §2.4's beam search, §3.3's group beam search, enumeration.

Zanella-Béguelin, Tople et al., "Analyzing Privacy Loss in Updates of Natural Language Models"
(CCS 2020). A sequence's score is the sum over its tokens of DS(t_i | t_<i) = M'(t_<i)(t_i) −
M(t_<i)(t_i), or of RDS = exp(log M' − log M) − 1. Every step scores all single-token extensions
of all beams under both models in one batched forward per chunk, reading on from each beam's KV
cache (``core.models.kv_cache``); the beam of length-1 sequences has width k, halved at every
extension (never below a floor: the sequences asked for). The search carries both scores of
every sequence, ranking by one, so that its partial results hold DS and RDS. Every sequence
is read after the context token (``<|endoftext|>``/BOS), so the first token is scored too;
special tokens are never used as extensions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from core.errors import UserError
from core.models import LoadedModel
from core.models.kv_cache import KVRows, forward_with_cache
from core.runtime import Cancelled, Progress, is_cancelled, no_progress
from core.scoring import context_ids

LOGITS_BUDGET = 2**23             # next-token scores per forward chunk (rows × vocabulary)


def allowed_tokens(lm: LoadedModel) -> torch.Tensor:
    """Boolean mask over the output vocabulary: real, non-special tokens."""
    size = lm.model.get_output_embeddings().weight.shape[0]
    allowed = torch.zeros(size, dtype=torch.bool)
    allowed[: min(size, len(lm.tokenizer))] = True
    added = getattr(lm.tokenizer, "added_tokens_decoder", {})
    special = {i for i in lm.tokenizer.all_special_ids if i is not None}
    special = [i for i in special | {i for i, t in added.items() if t.special} if i < size]
    allowed[special] = False
    return allowed


def context_of(lm: LoadedModel) -> list[int]:
    """The token(s) every sequence is read after; ``UserError`` when the tokenizer has none."""
    context = context_ids(lm.tokenizer)
    if not context:
        raise UserError(f"{lm.name}'s tokenizer has no BOS, EOS or <|endoftext|> token to read "
                        "the first token after, so differential scores cannot start")
    return context


def token_scores(log_after: torch.Tensor, log_before: torch.Tensor, relative: bool) -> torch.Tensor:
    """DS or RDS of every token from the two models' log-probabilities (float64)."""
    if relative:
        return torch.expm1(log_after.double() - log_before.double())
    return log_after.double().exp() - log_before.double().exp()


def tie_tolerance(lm: LoadedModel) -> float:
    """Scores this close count as ties (float32 ~1e-7 per token; half precision far more)."""
    return 1e-5 if next(lm.model.parameters()).dtype == torch.float32 else 2e-2


def widths(size: int, length: int, floor: int = 1) -> list[int]:
    """Beam width after each of the ``length`` steps: ``size``, halved at every step, never
    below ``floor`` (at most ``size``); a floor of 1 is the paper's schedule."""
    floor = max(1, min(floor, size))
    return [max(floor, size >> i) for i in range(length)]


@dataclass
class Beams:
    """Same-length sequences, their scores, and each model's KV cache of all but ``pending``."""

    tokens: torch.Tensor          # (n, i) searched tokens
    scores: torch.Tensor          # (n,) float64 cumulative score the search ranks by
    other: torch.Tensor           # (n,) float64 cumulative other score (RDS when ranking by DS)
    pending: torch.Tensor         # (n, m) tokens not yet in the caches
    caches: list[KVRows | None]   # per model
    group: int = 0
    n_above: int = 0              # extensions that scored above ``step``'s threshold
    seed: torch.Tensor | None = None   # (n,) index of the seed context each was read after

    def select(self, rows: slice, group: int) -> Beams:
        """The given rows, as beams of ``group``."""
        caches = [None if c is None else c.take(rows) for c in self.caches]
        return Beams(self.tokens[rows], self.scores[rows], self.other[rows], self.pending[rows],
                     caches, group, seed=None if self.seed is None else self.seed[rows])


class Stopped(Exception):
    """The cancel event was set in the middle of a step."""


class Expander:
    """Scores every single-token extension of many beams under both models, with the KV cache.

    ``extensions`` counts the (sequence, token) pairs scored, ``rows`` the beams expanded.
    """

    def __init__(self, before: LoadedModel, after: LoadedModel, relative: bool,
                 cancel: threading.Event | None = None):
        self.models = (before, after)
        self.relative = relative
        self.cancel = cancel
        self.allowed = allowed_tokens(before)
        self.extensions = 0
        self.rows = 0

    def start(self, seeds: list[list[int]] | None = None) -> Beams:
        """One beam per seed context (all of one length), read after the context token; with
        none, one beam: the context token (a document's start), nothing searched yet."""
        context = context_of(self.models[0])
        pending = torch.tensor([context + list(s) for s in seeds] if seeds else [context])
        zero = torch.zeros(len(pending), dtype=torch.float64)
        return Beams(torch.zeros((len(pending), 0), dtype=torch.long), zero, zero, pending,
                     [None, None], seed=torch.arange(len(pending)) if seeds else None)

    @staticmethod
    def _forward(lm: LoadedModel, cache: KVRows | None, rows: slice, pending: torch.Tensor):
        """Next-token log-probs of ``rows``, and their caches extended by ``pending``."""
        past = None if cache is None else cache.take(rows)
        logits, extended = forward_with_cache(lm.model, pending[rows].to(lm.device), past)
        return torch.log_softmax(logits[:, -1].float(), -1).cpu(), extended

    def expand(self, beams: Beams):
        """Yield (first row, candidate scores (rows, V), the same in the other score, the rows'
        extended caches) per chunk."""
        vocab = len(self.allowed)
        chunk = max(1, LOGITS_BUDGET // vocab)
        with torch.inference_mode():
            for start in range(0, len(beams.scores), chunk):
                if is_cancelled(self.cancel):
                    raise Stopped()
                rows = slice(start, start + chunk)
                (lb, cb), (la, ca) = (self._forward(lm, cache, rows, beams.pending)
                                      for lm, cache in zip(self.models, beams.caches))
                scores = token_scores(la[:, :vocab], lb[:, :vocab], self.relative)
                scores[:, ~self.allowed] = -torch.inf
                other = token_scores(la[:, :vocab], lb[:, :vocab], not self.relative)
                self.rows += len(scores)
                self.extensions += len(scores) * int(self.allowed.sum())
                yield (start, beams.scores[rows, None] + scores, beams.other[rows, None] + other,
                       (cb, ca))

    def step(self, beams: Beams, width: int | None, above: float = torch.inf) -> Beams:
        """The ``width`` best one-token extensions of ``beams`` (all of them when None);
        the result's ``n_above`` counts the extensions that scored above ``above``."""
        vocab = len(self.allowed)
        best, other = torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.float64)
        index = torch.empty(0, dtype=torch.long)
        parts, n_above = [], 0
        for start, cand, cand_other, caches in self.expand(beams):
            parts.append(caches)
            n_above += int((cand > above).sum())
            flat = cand.reshape(-1)
            keep = torch.isfinite(flat)
            best = torch.cat([best, flat[keep]])
            other = torch.cat([other, cand_other.reshape(-1)[keep]])
            index = torch.cat([index, (torch.arange(flat.numel()) + start * vocab)[keep]])
            if width is not None and len(best) > width:
                top = torch.topk(best, width)
                best, other, index = top.values, other[top.indices], index[top.indices]
        order = torch.argsort(best, descending=True, stable=True)
        best, other, index = best[order], other[order], index[order]
        parent, token = index // vocab, index % vocab
        caches = [KVRows.cat([p[m] for p in parts]).take(parent) for m in (0, 1)]
        return Beams(torch.cat([beams.tokens[parent], token[:, None]], 1), best, other,
                     token[:, None], caches, beams.group, n_above,
                     None if beams.seed is None else beams.seed[parent])


Snapshot = Callable[[list[Beams]], Any]   # the beams so far -> a partial result (JSON-able)


def beam_search(expander: Expander, *, beam: int, length: int, groups: int = 1, floor: int = 1,
                progress: Progress = no_progress, snapshot: Snapshot | None = None,
                seeds: list[list[int]] | None = None) -> tuple[list[Beams], bool]:
    """§2.4 beam search (``groups`` = 1) or §3.3 group beam search: the ``beam`` best first
    tokens split by score into ``groups`` groups, each extended on its own with width k/G halved
    (never below ``floor``/G). With ``seeds`` (token ids of in-domain contexts, one length),
    the first tokens are the best over every seed's next token, each then read after its seed.

    Each finished step is reported to ``progress`` with ``snapshot`` of the beams so far.
    Returns each group's final beams and whether the search was stopped early (then the
    unfinished group's beams are those of its last finished step, shorter than ``length``).
    """
    size = -(-beam // groups)
    steps = widths(size, length, -(-floor // groups))
    planned = len(seeds or [None]) + groups * sum(steps[:-1])
    rows_before = expander.rows
    tokenizer = expander.models[0].tokenizer

    def report(done: list[Beams], beams: Beams) -> None:
        best = tokenizer.decode(beams.tokens[0].tolist()) if len(beams.scores) else ""
        progress(min(1.0, (expander.rows - rows_before) / planned),
                 f"group {beams.group + 1} of {groups}: length {beams.tokens.shape[1]} of "
                 f"{length}, best {best!r}",
                 None if snapshot is None else snapshot(done + [beams]))

    try:
        first = expander.step(expander.start(seeds), beam)
    except Stopped:
        raise Cancelled("differential rank search cancelled before its first step") from None
    parts = [first.select(slice(g * size, (g + 1) * size), g) for g in range(groups)]
    done: list[Beams] = []
    for beams in (g for g in parts if len(g.scores)):
        report(done, beams)
        try:
            for width in steps[1:]:
                beams = expander.step(beams, width)
                report(done, beams)
        except Stopped:
            return done + [beams], True
        done.append(beams)
    return done, False


def exhaustive_search(expander: Expander, length: int, *, top: int = 10,
                      above: float = torch.inf) -> Beams:
    """All |V|^length sequences: the ``top`` best (``n_above``: how many score above ``above``)."""
    beams = expander.start()
    for _ in range(length - 1):
        beams = expander.step(beams, None)
    return expander.step(beams, top, above)
