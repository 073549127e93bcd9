"""The pieces of an HTML report that every attack's report section (``AuditHooks.section``)
is made of: escaped tables, plotly figures in the app's colours, ROC pairs, per-token heat maps
as coloured text.

A section returns HTML (tables escaped; plotly figures as divs that use the report's one
inline copy of plotly.js, with fixed ids so two reports of the same audit are identical).
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

from core.reporting.theme import themed
from core.reporting.figures import roc_figure

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
    """Two ROC figures of ``metrics`` (``core.reporting.figures.roc_figure``): linear and log axes."""
    return (figure(roc_figure(metrics, log=False), f"{name}-roc-linear")
            + figure(roc_figure(metrics, log=True), f"{name}-roc-log"))


HEAT_POSITIVE, HEAT_NEGATIVE = (33, 102, 172), (178, 24, 43)   # blue and red of plotly's RdBu
WHITE = "color:#fff"   # the legend's text on its full colours


def _heat_colour(value: float | None, scale: float) -> str:
    """A token's background: blue for a positive value, red for a negative one, white at 0,
    full colour at ±``scale``; none for a missing value."""
    if value is None or not math.isfinite(value):
        return "transparent"
    red, green, blue = HEAT_POSITIVE if value > 0 else HEAT_NEGATIVE
    return f"rgba({red},{green},{blue},{min(abs(value) / scale, 1.0) * 0.85:.3f})"


def _nats(value: float | None) -> str:
    return f"{value:+.3f}" if value is not None and math.isfinite(value) else "—"


def token_heat_maps(texts: Sequence[tuple[str, Sequence[str], Sequence[float]]],
                    what: str = "log p_target − log p_reference") -> str:
    """Texts as static coloured spans, one block each under its title, and a legend: every
    (title, tokens, per-token values in nats) with one colour scale, ± the largest |value|
    (blue: positive; red: negative); each token's value in its tooltip."""
    values = [abs(v) for _, _, vs in texts for v in vs if v is not None and math.isfinite(v)]
    scale = max(values, default=0.0) or 1.0
    legend = (f"<p class='heat-legend muted'>{html.escape(what)} per token, in nats: "
              f"<span style='background:{_heat_colour(-scale, scale)};{WHITE}'>−{scale:.2f}</span> "
              f"<span style='background:{_heat_colour(0.0, scale)}'>0</span> "
              f"<span style='background:{_heat_colour(scale, scale)};{WHITE}'>+{scale:.2f}</span> "
              "(blue: positive, red: negative; a token's value is in its tooltip)</p>")
    blocks = []
    for title, tokens, token_values in texts:
        spans = "".join(
            f"<span style='background:{_heat_colour(v, scale)}' title='{_nats(v)}'>"
            f"{html.escape(t.replace(chr(10), '⏎'))}</span>"
            for t, v in zip(tokens, token_values))
        blocks.append(f"<h4>{html.escape(title)}</h4><p class='heat'>{spans}</p>")
    return legend + "".join(blocks)
