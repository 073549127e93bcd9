"""Scale-out: the scoring engine's forward passes on a pool of Ray workers instead of in process.

    with scaleout.using(ScaleOut(address="auto", workers=2)):
        spec.run(config)          # every engine call of the run is sharded over the workers

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

Without ``using`` nothing changes and Ray is not imported. Only a model loaded from a source
(``core.models.load_model``: a folder, file, adapter or named source) can be scored remotely,
since each worker loads it again; a model held only in memory (being trained) is scored in
process.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

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


_ACTIVE: contextvars.ContextVar[ScaleOut | None] = contextvars.ContextVar("scaleout", default=None)


@contextlib.contextmanager
def using(settings: ScaleOut | None):
    """Within the block (this thread), the engine scores on Ray as ``settings`` say (None: in
    process)."""
    token = _ACTIVE.set(settings)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def remote_scorer(lm):
    """The Ray scorer for ``lm`` when scale-out is on and ``lm`` can be reloaded by a worker
    (it has a source identity), else None."""
    settings = _ACTIVE.get()
    if settings is None or not getattr(lm, "identity", ""):
        return None
    from core.scaleout.ray_scoring import RayScorer

    return RayScorer(settings, lm)
