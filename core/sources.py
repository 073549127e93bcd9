"""Named sources and presets that plug-ins register, so generic code has no special cases.

A plug-in (today only the demo scenario) registers, at import:

* model sources: short names such as ``prefix:base`` that resolve to a model folder;
* data sources: short names that resolve to a data file, each with an optional note a page
  shows when it is chosen (e.g. how the demo's users are split);
* presets: config values a page or the CLI (``--preset NAME``) starts a spec from.

Loaders and readers ask ``model_path`` / ``data_path`` first and fall back to treating the
string as a path. Plug-ins are imported on first use (``PLUGINS``), and must stay light: no
torch at import.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Any, Callable

PLUGINS: tuple[str, ...] = ("core.demo.sources",)

Resolver = Callable[[str], Path]  # the short name -> its path now (UserError if not built)

_models: dict[str, Resolver] = {}
_data: dict[str, Resolver] = {}
_notes: dict[str, Callable[[str], str]] = {}
_presets: dict[tuple[str, str], dict[str, Any]] = {}
_loaded = False
_lock = threading.Lock()


def _load_plugins() -> None:
    global _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            for module in PLUGINS:
                importlib.import_module(module)


def register_model(name: str, resolver: Resolver) -> None:
    _models[name] = resolver


def register_data(name: str, resolver: Resolver,
                  note: Callable[[str], str] | None = None) -> None:
    _data[name] = resolver
    if note is not None:
        _notes[name] = note


def data_note(source: str) -> str:
    """The line a page shows about a named data source ("" if it has none); a ``UserError``
    when the source is not built yet."""
    _load_plugins()
    note = _notes.get(source.strip())
    return "" if note is None else note(source.strip())


def register_preset(spec: str, preset: str, values: dict[str, Any]) -> None:
    """Config values ``preset`` gives spec ``spec`` (e.g. the demo's models and files)."""
    _presets[(spec, preset)] = dict(values)


def model_names() -> list[str]:
    """The registered model source names, in registration order."""
    _load_plugins()
    return list(_models)


def data_names() -> list[str]:
    _load_plugins()
    return list(_data)


def is_named_model(source: str) -> bool:
    _load_plugins()
    return source.strip() in _models


def model_path(source: str) -> Path | None:
    """The folder a named model source resolves to now, or None if ``source`` is not one."""
    _load_plugins()
    resolver = _models.get(source.strip())
    return None if resolver is None else resolver(source.strip())


def data_path(source: str) -> Path | None:
    """The file a named data source resolves to now, or None if ``source`` is not one."""
    _load_plugins()
    resolver = _data.get(source.strip())
    return None if resolver is None else resolver(source.strip())


def preset(spec: str, name: str) -> dict[str, Any]:
    """The values of preset ``name`` for spec ``spec`` ({} if it has none); a value given as a
    function (e.g. a secret a build chose) is asked for now."""
    _load_plugins()
    return {k: v() if callable(v) else v for k, v in _presets.get((spec, name), {}).items()}


def preset_names(spec: str) -> list[str]:
    _load_plugins()
    return [name for (owner, name) in _presets if owner == spec]
