"""Turn results (dataclasses, numpy arrays, paths) into JSON-able values."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Recursively convert ``value`` to plain JSON types; non-finite floats become None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # torch / numpy scalars
        return to_jsonable(value.item())
    return value


def from_jsonable(kind: type, value: dict) -> Any:
    """Read back a dataclass that ``to_jsonable`` wrote: nested dataclasses, lists of them,
    tuples and optional fields, by the type hints (dacite; types are not re-checked, since
    non-finite floats were stored as None)."""
    import dacite

    return dacite.from_dict(kind, value, config=dacite.Config(cast=[tuple], check_types=False))
