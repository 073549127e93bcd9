"""Stored runs read back as their specs' typed configs and results."""

from __future__ import annotations

from typing import Any

from core.errors import UserError
from core.jobs.store import Run
from core.registry import find_spec
from core.serialize import from_jsonable
from core.specs import AttackSpec


def spec_of(run: Run) -> AttackSpec | None:
    """The spec that made ``run`` (None for a kind that is not a registered spec)."""
    return find_spec(run.kind)


def load_config(run: Run) -> Any:
    """The run's config as its spec's config dataclass (``UserError`` if it no longer reads)."""
    spec = spec_of(run)
    if spec is None:
        raise UserError(f"run {run.id} is of kind {run.kind!r}, which is no registered spec")
    return from_jsonable(spec.config_type, run.params)


def load_result(run: Run) -> Any | None:
    """The run's result as its spec's result dataclass; None when it has none or no spec, or
    was stored by an older version whose fields no longer match."""
    spec = spec_of(run)
    if spec is None or not isinstance(run.result, dict):
        return None
    try:
        return from_jsonable(spec.result_type, run.result)
    except Exception:  # dacite's errors, and a config __post_init__ of an older shape
        return None
