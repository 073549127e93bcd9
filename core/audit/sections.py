"""The report's section of each attack: its key tables and figures, from its typed result.

Each builder returns HTML (tables escaped; plotly figures as divs that use the report's one
inline copy of plotly.js, with fixed ids so two reports of the same audit are identical).
"""

from __future__ import annotations

import html
from typing import Any, Callable, Sequence

from core.audit.figure_theme import themed
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


def _ci(values: list[float]) -> str:
    return f"[{values[0]:.3f}, {values[1]:.3f}]" if values else "no bootstrap"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rocs(metrics, name: str) -> str:
    return (figure(roc_figure(metrics, log=False), f"{name}-roc-linear")
            + figure(roc_figure(metrics, log=True), f"{name}-roc-log"))


def extraction(result) -> str:
    """The ten longest distinct memorised spans, each once with the samples that hold it, and
    the precision of every ranking."""
    spans: dict[str, list] = {}
    for c in sorted((c for c in result.candidates if c.memorized),
                    key=lambda c: (-c.span_tokens, -c.k_eidetic)):
        spans.setdefault(" ".join((c.span or "").split()), []).append(c)
    rows = [(found[0].span_tokens, found[0].k_eidetic, len(found),
             ", ".join(sorted({c.strategy for c in found})), _short(span), _short(found[0].text))
            for span, found in list(spans.items())[:10]]
    precision = [(strategy, metric, "—" if p is None else f"{p:.2f}")
                 for strategy, by in result.precision.items() for metric, p in by.items()]
    return ("<h3>Memorised passages (longest verbatim span first)</h3>"
            + table(("span tokens", "training documents", "samples holding it", "strategies",
                     "span", "one of those samples"), rows)
            + "<h3>Precision of each ranking (memorised fraction of its top candidates)</h3>"
            + table(("strategy", "metric", "precision"), precision))


def diffrank(result) -> str:
    rows = [(r.rank + 1, r.phrase, r.ds, r.rds, r.found_by) for r in result.rows[:20]]
    return ("<h3>The sequences the update raised most</h3>"
            + table(("rank", "sequence", "DS", "RDS", "found by"), rows))


def user_inference(result) -> str:
    rows = [(m.group, m.n_in, m.n_out, f"{m.auroc:.3f}", _ci(m.auroc_ci),
             f"{m.tpr_at_1pct_fpr:.3f}", f"{m.tpr_at_5pct_fpr:.3f}") for m in result.metrics]
    top = [(r.rank, r.user_id, r.t_hat, r.member) for r in result.rows[:15]]
    return (table(("users", "held-in", "held-out", "AUROC", "95% CI", "TPR @ 1% FPR",
                   "TPR @ 5% FPR"), rows)
            + (_rocs(result.metrics, "user-inference") if result.metrics else "")
            + "<h3>Users ranked by T̂</h3>" + table(("rank", "user", "T̂", "member"), top))


def mia(result) -> str:
    from core.attacks.mia import comparison

    rows = comparison(result)
    return (table(list(rows[0]), [list(r.values()) for r in rows])
            + _rocs([a.metrics for a in result.attacks] + [result.blind], "mia"))


def lazy_risk(result) -> str:
    train = [x for x in result.sentences if x.set == "train"][:10]
    rows = [(x.rank, _short(x.text), x.log10_probability, x.calibrated_loss, x.copies)
            for x in train]
    tracked = [(t.text, t.rank, t.matches) for t in result.tracked]
    return (table(("rank", "sentence", "log10 λ(x)", "calibrated loss", "copies"), rows)
            + (table(("tracked", "rank", "matching sentences"), tracked) if tracked else ""))


BUILDERS: dict[str, Callable[[Any], str]] = {
    "extraction": extraction, "diffrank": diffrank, "user-inference": user_inference,
    "mia": mia, "lazy-risk": lazy_risk}
