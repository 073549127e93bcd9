"""Stored runs read back as their specs' typed configs and results."""

from __future__ import annotations

import logging
from typing import Any

import dacite

from core.errors import UserError
from core.jobs.store import Run
from core.registry import find_spec
from core.serialize import from_jsonable
from core.specs import AttackSpec

_log = logging.getLogger(__name__)
# What a stored result of an older shape raises when read as today's result type: dacite's
# missing or mistyped fields, unexpected keywords, and a (config) __post_init__ that refuses
# old values (UserError is a ValueError).
SHAPE_ERRORS = (dacite.DaciteError, TypeError, KeyError, ValueError)


class ReadBackError(UserError):
    """A stored result that could not be read back for a reason other than its shape;
    ``reason`` is the failure in one line (``"RuntimeError: ..."``)."""

    def __init__(self, run_id: int, reason: str):
        super().__init__(f"run {run_id}'s result could not be read back: {reason}")
        self.reason = reason


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
    was stored by an older version whose fields no longer match. Any other failure is logged
    and raised as a one-line ``ReadBackError``."""
    spec = spec_of(run)
    if spec is None or not isinstance(run.result, dict):
        return None
    try:
        return from_jsonable(spec.result_type, run.result)
    except SHAPE_ERRORS:
        return None
    except Exception as err:
        _log.exception("reading back the result of run %s (%s) failed", run.id, run.kind)
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise ReadBackError(run.id, reason) from err
