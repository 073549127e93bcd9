"""A text's tokens coloured by a per-token value: log p_target − log p_reference (where the
membership or memorisation signal is), or log p_target without a reference. Extraction's
candidates and the membership page's texts share it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.text import chart_text

HEAT_ROW = 16      # tokens per row of the heat map
HEAT_ROW_PX = 44   # height of one row of the heat map
HEAT_MIN_ROWS = 4  # a short text's rows stretch to this many: a plot area of 176 px
HEAT_MARGIN = dict(l=10, r=10, t=50, b=10)


def token_heat_map(tokens: Sequence[str], values: Sequence[float], has_reference: bool,
                   trained: Sequence[bool] | None = None) -> go.Figure:
    """Tokens in rows of HEAT_ROW, coloured by log p_target − log p_reference (diverging at 0),
    or by log p_target without a reference; with ``trained`` (a chat row's mask), only the
    tokens training learnt from are coloured, the context left blank and bracketed."""
    context = [not t for t in trained] if trained is not None and not all(trained) else []
    shown = [chart_text(t.replace("\n", "⏎")) for t in tokens]
    shown = [f"[{t}]" if i < len(context) and context[i] else t for i, t in enumerate(shown)]
    rows = -(-len(shown) // HEAT_ROW)
    z = np.full(rows * HEAT_ROW, np.nan)
    z[: len(values)] = np.asarray(values, dtype=float)
    z[: len(context)][np.asarray(context, dtype=bool)] = np.nan
    text = shown + [""] * (rows * HEAT_ROW - len(shown))
    what = "log p_target − log p_reference" if has_reference else "log p_target"
    what += " on the trained tokens ([context] left blank)" if context else ""
    fig = go.Figure(go.Heatmap(
        z=z.reshape(rows, HEAT_ROW), text=np.array(text, dtype=object).reshape(rows, HEAT_ROW),
        texttemplate="%{text}", colorscale="RdBu", zmid=0 if has_reference else None,
        colorbar=dict(title="nats"), hovertemplate="%{text}: %{z:.2f}<extra></extra>"))
    plot_px = HEAT_ROW_PX * max(rows, HEAT_MIN_ROWS)
    fig.update_layout(title=f"Per token: {what}", margin=HEAT_MARGIN,
                      height=HEAT_MARGIN["t"] + HEAT_MARGIN["b"] + plot_px,
                      yaxis=dict(autorange="reversed", showticklabels=False),
                      xaxis=dict(showticklabels=False))
    return fig
