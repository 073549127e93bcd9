"""The pieces of an HTML report that every attack's report section (``AuditHooks.section``)
is made of: escaped tables, plotly figures in the app's colours, ROC pairs.

A section returns HTML (tables escaped; plotly figures as divs that use the report's one
inline copy of plotly.js, with fixed ids so two reports of the same audit are identical).
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from core.figure_theme import themed
from core.figures import roc_figure

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An HTML table, every cell escaped (floats to 4 significant digits)."""
    def cell(value: Any) -> str:
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        return f"<td>{html.escape(text)}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(f"<tr>{''.join(cell(v) for v in row)}</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure(fig, div_id: str) -> str:
    """``fig`` as a div of the report, in the app's colours (``figure_theme``)."""
    return themed(fig).to_html(full_html=False, include_plotlyjs=False,
                               config=PLOTLY_CONFIG, div_id=div_id)


def ci(values: list[float]) -> str:
    """A bootstrap interval ``[lo, hi]`` in words ("no bootstrap" when empty)."""
    return f"[{values[0]:.3f}, {values[1]:.3f}]" if values else "no bootstrap"


def short(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rocs(metrics, name: str) -> str:
    """Two ROC figures of ``metrics`` (``core.figures.roc_figure``): linear and log axes."""
    return (figure(roc_figure(metrics, log=False), f"{name}-roc-linear")
            + figure(roc_figure(metrics, log=True), f"{name}-roc-log"))
