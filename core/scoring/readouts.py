"""What the scoring engine reads out of the next-token distribution at each scored position.

A readout is a ``Sampler`` (the log-density of the scored token under the model, or under a
top-k / temperature sampler) or a ``Moment`` (a statistic of the whole next-token
distribution). ``chunk_values`` computes them on a chunk of positions from the float32 logits
of those positions only, so the engine never holds vocabulary-sized rows for a whole batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.errors import UserError


@dataclass(frozen=True)
class Sampler:
    """A top-k and/or temperature sampler, whose per-token density is (Stock et al. §3.2)

        λ(x_i | x_<i) = f(x_i | x_<i)^(1/β_i) / Σ_{y ∈ T_k} f(y | x_<i)^(1/β_i)   if x_i ∈ T_k,
                        0                                                          otherwise,

    i.e. log λ = z_{x_i}/β_i − logsumexp_{y ∈ T_k} z_y/β_i for logits z, and −inf outside
    the top-k set T_k. Ties with the k-th logit are kept in T_k (as transformers' top-k
    warper does). ``temperature`` is one β, or a schedule (β_1, β_2, ...) indexed by scored
    token, its last value repeated (Carlini et al.'s decaying temperature). ``top_p`` (nucleus
    sampling, Holtzman et al. 2020) then keeps the fewest most likely tokens whose tempered,
    top-k probabilities sum to at least p, renormalised (transformers' order: temperature,
    top-k, top-p).
    """

    top_k: int | None = None
    temperature: float | tuple[float, ...] = 1.0
    top_p: float | None = None

    def __repr__(self) -> str:   # the cache's key: unchanged for the samplers without top-p
        nucleus = "" if self.top_p is None else f", top_p={self.top_p!r}"
        return f"Sampler(top_k={self.top_k!r}, temperature={self.temperature!r}{nucleus})"

    def __post_init__(self):
        if isinstance(self.temperature, list):
            object.__setattr__(self, "temperature", tuple(self.temperature))
        temps = self.temperature if isinstance(self.temperature, tuple) else (self.temperature,)
        if not temps or not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in temps):
            raise UserError(f"temperature must be a positive number (or a list of them), not {self.temperature!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise UserError(f"top-k must be a whole number >= 1 (or none), not {self.top_k!r}")
        if self.top_p is not None and not (isinstance(self.top_p, (int, float))
                                           and 0 < self.top_p <= 1):
            raise UserError(f"top-p must be above 0 and at most 1 (or none), not {self.top_p!r}")

    @property
    def is_plain(self) -> bool:
        """True when this is the model's own distribution (no top-k, temperature 1)."""
        temps = self.temperature if isinstance(self.temperature, tuple) else (self.temperature,)
        return self.top_k is None and self.top_p in (None, 1) and all(t == 1.0 for t in temps)

    def temperatures(self, first: int, count: int) -> np.ndarray:
        """β for the scored tokens ``first .. first + count - 1``."""
        if not isinstance(self.temperature, tuple):
            return np.full(count, float(self.temperature))
        schedule = np.asarray(self.temperature, dtype=np.float64)
        return schedule[np.minimum(np.arange(first, first + count), len(schedule) - 1)]


@dataclass(frozen=True)
class Moment:
    """Instead of the next token's log-probability, a statistic of the model's whole
    next-token distribution p(· | x_<i) at each scored position, from the same forward pass:
    ``mean`` μ_i = Σ_z p(z) log p(z) (minus the entropy) or ``variance``
    σ²_i = Σ_z p(z) (log p(z) − μ_i)². Min-K%++ standardises log p(x_i) by them (Zhang et al.
    2024, "Min-K%++", Eq. 3)."""

    statistic: str = "mean"

    def __post_init__(self):
        if self.statistic not in ("mean", "variance"):
            raise UserError(f"unknown moment {self.statistic!r}: choose mean or variance")


@dataclass(frozen=True)
class Rank:
    """Instead of the next token's log-probability, its rank under the model's own next-token
    distribution: 1 + the number of tokens with a larger logit (1: the greedy choice; ties
    share the best rank). Rank-aware extraction cost reads it (Liu, Evans & Xiong 2026)."""


Readout = Sampler | Moment | Rank


def chunk_values(logits: torch.Tensor, targets: torch.Tensor, readouts: Sequence[Readout],
                 temperatures: dict[Sampler, torch.Tensor]) -> torch.Tensor:
    """(readouts, positions) values from the ``logits`` (positions, vocab) of a chunk of
    positions, in float32 whatever their dtype, whose next tokens are ``targets`` (positions,);
    ``temperatures`` holds each non-plain sampler's β per position. The model's own
    log p = z − logsumexp z is computed once for all the readouts that need it; torch's
    logsumexp sums in cascade, 5x closer to float64 than the fused log-softmax over a 49k
    vocabulary (2e-6 against 9e-6 nats), for 1.5x its time on the CPU
    (``bench/chat_mask_check.py``)."""
    logits = logits.float()
    own = [r for r in readouts if isinstance(r, Moment) or (isinstance(r, Sampler) and r.is_plain)]
    normaliser = torch.logsumexp(logits, dim=-1) if own else None
    moments = (_moments(logits - normaliser.unsqueeze(-1))
               if any(isinstance(r, Moment) for r in own) else {})
    return torch.stack([_ranks(logits, targets) if isinstance(r, Rank)
                        else moments[r.statistic] if isinstance(r, Moment)
                        else _gathered(logits, targets) - normaliser if r.is_plain
                        else _sampler_logprobs(logits, targets, r, temperatures[r]) for r in readouts])


def _gathered(logp: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _ranks(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """1 + the number of tokens whose logit exceeds the target's, at every position."""
    own = logits.gather(-1, targets.unsqueeze(-1))
    return 1.0 + (logits > own).sum(-1).float()


def _moments(logp: torch.Tensor) -> dict[str, torch.Tensor]:
    """μ and σ² of log p(z) under z ~ p(· | before), at every position (see ``Moment``), from
    the log-probabilities ``logp``."""
    p = logp.exp()
    mean = (p * logp).sum(-1)
    return {"mean": mean, "variance": (p * (logp - mean.unsqueeze(-1)).square()).sum(-1)}


def warped_logits(logits: torch.Tensor, sampler: Sampler, temperatures: torch.Tensor) -> torch.Tensor:
    """The ``sampler``'s logits (positions, vocab) from the model's: z/β per position (β a
    scalar or one per position), and −inf below the k-th largest (ties kept). What generation
    samples from and what the scoring engine scores under: one density for both."""
    logits = logits / (temperatures.unsqueeze(-1) if temperatures.ndim else temperatures)
    if sampler.top_k is not None and sampler.top_k < logits.shape[-1]:
        kth = logits.topk(sampler.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if sampler.top_p is not None and sampler.top_p < 1:
        logits = _nucleus(logits, sampler.top_p)
    return logits


def _nucleus(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """−inf outside the nucleus: a token is dropped when the tokens more likely than it
    already hold probability ≥ p (so the most likely one always stays)."""
    ordered, order = logits.sort(dim=-1, descending=True)
    probs = ordered.softmax(-1)
    before = probs.cumsum(-1) - probs
    drop = torch.zeros_like(before, dtype=torch.bool).scatter(-1, order, before >= top_p)
    return logits.masked_fill(drop, float("-inf"))


def _sampler_logprobs(logits: torch.Tensor, targets: torch.Tensor, sampler: Sampler,
                      temperatures: torch.Tensor) -> torch.Tensor:
    """log λ(target | before) under ``sampler`` at every position (see ``Sampler``): −inf for a
    target outside the top-k, whose logit is masked to −inf before the log-softmax."""
    return _gathered(torch.log_softmax(warped_logits(logits, sampler, temperatures), dim=-1), targets)
