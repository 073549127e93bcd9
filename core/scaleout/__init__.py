"""Scale-out: the scoring engine's forward passes on a pool of Ray workers instead of in process.

    with scaleout.using(ScaleOut(address="auto", workers=2)) as placement:
        spec.run(config)          # every engine call of the run is sharded over the workers
    placement.workers, placement.shards   # what went to Ray within the block

Ray actors, not Ray Data: the engine's unit of work is a batch of token sequences under one
loaded model, and an actor holds that model once for all the shards it scores, where Ray Data's
map_batches would hand us a dataset abstraction the attacks do not have (their inputs are
lists built in process, their outputs merged into the engine's score store). So
``core.scaleout.ray_scoring`` keeps a pool of actors per model and cuts the sequences the
engine still has to score into shards of ``shard_tokens`` tokens; each shard's result is
written to disk as it arrives and merged by the engine's own code (``ScoreStore.put``), so every
attack that scores through the engine (extraction, differential rank, user inference,
membership inference, exposure) scales out, and a rerun after an interruption skips the shards
it has. Generation, training and the bounds stay in process.

The job runner enters ``using`` for every run with the setting in effect where the run starts
(``current``): a page's choice, the CLI's ``--ray``, or the run this one is a part of (an
audit's attacks, a series' audits), and stores the block's ``Placement`` with the run.

Without ``using`` nothing changes and Ray is not imported. Only a model loaded from a source
(``core.models.load_model``: a folder, file, adapter or named source) can be scored remotely,
since each worker loads it again; a model held only in memory (being trained) is scored in
process.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any

from core.errors import UserError

DEFAULT_SHARD_TOKENS = 16_384  # tokens per shard: ~64 texts of 256 tokens


@dataclass(frozen=True)
class ScaleOut:
    """Where the engine's work goes: ``address`` ``auto`` (the Ray cluster this machine belongs
    to, else a local one started for the process) or ``host:port`` / ``ray://host:port``;
    ``workers`` actors per model (0: one per GPU of the cluster, else one per CPU)."""

    address: str = "auto"
    workers: int = 0
    shard_tokens: int = DEFAULT_SHARD_TOKENS

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise UserError("the Ray address must be 'auto' or a cluster address (host:port)")
        if not 0 <= self.workers <= 4096:
            raise UserError(f"Ray workers must be from 0 (one per GPU or CPU) to 4096, not {self.workers}")
        if self.shard_tokens < 1:
            raise UserError(f"tokens per shard must be >= 1, not {self.shard_tokens}")


@dataclass
class Placement:
    """Where the scoring of a ``using`` block went: the Ray cluster's ``address``, the most
    ``workers`` a pool had, the ``shards`` scored there and those ``resumed`` from the files of
    an interrupted earlier run."""

    address: str
    workers: int = 0
    shards: int = 0
    resumed: int = 0


_ACTIVE: contextvars.ContextVar[ScaleOut | None] = contextvars.ContextVar("scaleout", default=None)
# The placements of the blocks this thread is inside, innermost last: a run's and its parents'.
_PLACEMENTS: contextvars.ContextVar[tuple[Placement, ...]] = contextvars.ContextVar(
    "placements", default=())


def current() -> ScaleOut | None:
    """The setting in effect in this thread (None: in process)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def using(settings: ScaleOut | None):
    """Within the block (this thread), the engine scores on Ray as ``settings`` say (None: in
    process); yields the block's ``Placement`` (None in process), counted as the work goes."""
    placement = None if settings is None else Placement(settings.address)
    if settings is not None:
        from core.scoring.engine import install_remote_scorer

        install_remote_scorer(remote_scorer)
    outer = _PLACEMENTS.get()
    tokens = _ACTIVE.set(settings), _PLACEMENTS.set(outer + ((placement,) if placement else ()))
    try:
        yield placement
    finally:
        _PLACEMENTS.reset(tokens[1])
        _ACTIVE.reset(tokens[0])


def note(*, workers: int = 0, shards: int = 0, resumed: int = 0) -> None:
    """Count work done on Ray in the placement of every block this thread is inside."""
    for placement in _PLACEMENTS.get():
        placement.workers = max(placement.workers, workers)
        placement.shards += shards
        placement.resumed += resumed


def describe_placement(placement: dict[str, Any] | None, *, address: bool = False) -> str:
    """A stored placement in words: ``"Ray: 2 workers, 14 shards"`` (with ``address``:
    ``"Ray (auto): ..."``), ``"in process"``."""
    if not placement:
        return "in process"
    ray = f"Ray ({placement['address']})" if address else "Ray"
    resumed = f" (+{placement['resumed']} from an earlier run)" if placement["resumed"] else ""
    return f"{ray}: {_count(placement['workers'], 'worker')}, " \
           f"{_count(placement['shards'], 'shard')}{resumed}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def remote_scorer(lm):
    """The Ray scorer for ``lm`` when scale-out is on and ``lm`` can be reloaded by a worker
    (it has a source identity), else None."""
    settings = _ACTIVE.get()
    if settings is None or not getattr(lm, "identity", ""):
        return None
    from core.scaleout.ray_scoring import RayScorer

    return RayScorer(settings, lm)
