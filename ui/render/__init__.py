"""One renderer per spec, used by the spec's page and by the Runs page alike.

The renderer of spec ``name`` is ``render(result, *, key)`` in ``ui/render/<name>.py`` (dashes
become underscores): it draws a result dataclass with the page's own tables and figures, and
prefixes every widget key with ``key`` so that two drawings never collide. Adding an attack is
one core module plus this one file.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from core.registry import get_spec
from ui.jobs import download_buttons


def renderer(kind: str) -> Callable[..., None] | None:
    """The ``render`` function of spec ``kind``, or None if it has no renderer."""
    module = f"ui.render.{kind.replace('-', '_')}"
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
