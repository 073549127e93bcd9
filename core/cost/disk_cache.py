"""The cost estimator's disk cache: ``cache_home()/cache/cost.json``, sections of JSON values by
key (model sizes keyed by their file's path, size and time; this machine's measured rates by
device and shape: the same whichever lab home asks, so homes sharing a cache share them).
Written whole to a temporary file and renamed, so that a reader never sees half a file; a file
that does not parse is started afresh."""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path

from core import paths

_LOCK = threading.Lock()


def _file() -> Path:
    folder = paths.cache_home() / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "cost.json"


def _read() -> dict:
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def get(section: str, key: str):
    """The value stored under ``key`` in ``section``, or None."""
    value = _read().get(section, {})
    return value.get(key) if isinstance(value, dict) else None


def put(section: str, key: str, value) -> None:
    """Store ``value`` (JSON) under ``key`` in ``section``."""
    with _LOCK:
        data = _read()
        data.setdefault(section, {})[key] = value
        target = _file()
        staging = target.with_name(f".cost-{uuid.uuid4().hex}.json")
        staging.write_text(json.dumps(data), encoding="utf-8")
        os.replace(staging, target)
