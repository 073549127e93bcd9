"""One renderer per spec, used by the spec's page and by the Runs page alike.

The renderer of spec ``name`` is ``render(result, *, key)`` in ``ui/render/<name>.py`` (dashes
become underscores): it draws a result dataclass with the page's own tables and figures, and
prefixes every widget key with ``key`` so that two drawings never collide. Adding an attack is
its core package, this one file (or a module named by its registry entry) and its tests
(``docs/architecture.md``).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from core import registry
from core.registry import get_spec, spec_name
from ui.jobs import download_buttons


def renderer(kind: str) -> Callable[..., None] | None:
    """The ``render`` function of spec ``kind``, or None if it has no renderer: in the module its
    registry entry names (``core.registry.register``), else in ``ui/render/<kind>.py``."""
    entry = registry.ENTRIES.get(spec_name(kind) or kind)
    module = (entry and entry.renderer) or f"ui.render.{kind.replace('-', '_')}"
    if importlib.util.find_spec(module) is None:
        return None
    return importlib.import_module(module).render


def render_result(kind: str, result: Any, *, key: str) -> bool:
    """Draw ``result`` with its spec's renderer and offer JSON/CSV downloads; False if none."""
    draw = renderer(kind)
    if draw is None:
        return False
    draw(result, key=key)
    download_buttons(result, kind, key=key, table=get_spec(kind).table)
    return True
