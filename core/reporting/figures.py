"""Plotly figures shared by the pages and the audit report (no streamlit): the ROC of membership
attacks (user inference, membership inference), linear or log-log, and the leakage measures of
an audit series against the training step."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from core.evaluation.membership import Metrics

FEW_STEPS = 12   # up to this many steps in a panel, each gets its tick


def roc_figure(metrics: list[Metrics], log: bool) -> go.Figure:
    """One ROC step curve per group, and the chance line; ``log``: log-log (the low-FPR region)."""
    fig = go.Figure()
    for m in metrics:
        points = [(f, t) for f, t in zip(m.roc_fpr, m.roc_tpr) if not log or (f > 0 and t > 0)]
        fig.add_scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines",
                        line_shape="hv", name=f"{m.group} (AUROC {m.auroc:.3f})")
    # log-log: the axes start at the smallest rate the users can show, 1/n (its resolution)
    low_fpr = min((m.fpr_resolution for m in metrics if m.n_out), default=1e-3) if log else 0.0
    low_tpr = min((1 / m.n_in for m in metrics if m.n_in), default=1e-3) if log else 0.0
    low = min(low_fpr, low_tpr)
    fig.add_scatter(x=[low, 1], y=[low, 1], mode="lines", name="chance",
                    line=dict(dash="dot", color="grey"))
    kind = "log" if log else "linear"
    span = (lambda start: [math.log10(start) - 0.05, 0.02]) if log else (lambda _: [0, 1.01])
    fig.update_layout(
        title=(f"ROC (log-log: the low-FPR region; the FPR resolution is 1/{round(1 / low_fpr)})"
               if log else "ROC (linear)"),
        xaxis=dict(title="false positive rate", type=kind, range=span(low_fpr)),
        yaxis=dict(title="true positive rate", type=kind, range=span(low_tpr)), height=400)
    return fig


def metrics_by_step_figure(panels: dict[str, tuple[list[float], list[float]]],
                           x_title: str, columns: int = 3) -> go.Figure:
    """One small panel per measure (title -> (training steps, values)), markers and lines: how
    each measure moves over training."""
    from plotly.subplots import make_subplots

    columns = min(columns, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=list(panels),
                        horizontal_spacing=0.08, vertical_spacing=0.5 / rows)
    for number, (x, y) in enumerate(panels.values()):
        row, col = number // columns + 1, number % columns + 1
        fig.add_scatter(x=x, y=y, mode="lines+markers", showlegend=False, row=row, col=col,
                        line=dict(color="#e8590c"))
        # a tick at each step when there are few (no 1.5 between two places in a list)
        fig.update_xaxes(title_text=x_title, row=row, col=col,
                         tickvals=x if len(x) <= FEW_STEPS else None)
    fig.update_layout(title="How each leakage measure changes over training",
                      height=120 + 260 * rows, margin=dict(t=110))
    return fig
