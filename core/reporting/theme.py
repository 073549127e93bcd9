"""The report's plotly template: the colours the app draws its charts in, written into the figure.

Importing Streamlit makes its plotly template the default (``pio.templates.default =
"streamlit"``). That template colours traces with placeholders (``colorway`` ``#000001`` …
``#000010``) that only the app's browser code swaps for the theme's colours, so a figure
serialised in the app's process (the report it offers for download) drew every curve in black.
Each figure the report writes gets ``TEMPLATE`` instead: plotly's white template with the colours
Streamlit's light theme swaps in, which is the app's theme (``.streamlit/config.toml`` sets none).
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

# Streamlit's chart colours on a light background, in order: its frontend's
# chartCategoricalColors (blue80, blue40, red80, red40, blueGreen80, green40, orange80,
# orange50, purple80, gray40 of its palette), which replace #000001 ... #000010.
APP_COLORWAY = ("#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700",
                "#ffd16a", "#6d3fc0", "#d5dae5")


def _template() -> go.layout.Template:
    template = go.layout.Template(pio.templates["plotly_white"])
    template.layout.colorway = APP_COLORWAY
    return template


TEMPLATE = _template()


def themed(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` drawn with ``TEMPLATE`` (whatever template it was built with)."""
    copy = go.Figure(fig)
    copy.layout.template = TEMPLATE
    return copy
