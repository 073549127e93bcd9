"""What the audit takes of differential rank: its inputs, its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations


from core.calibration.public import with_public
from core.reporting.html import table
from core.specs import AuditHooks


def verdict(result) -> str:
    top = "; ".join(f"“{r.phrase}”" for r in result.rows[:10])
    phrase = result.phrase
    typed = (f" The phrase “{phrase.text}”: {phrase.rank} searched sequences score higher."
             if phrase is not None and phrase.rank is not None else "")
    return (f"The {len(result.rows)} sequences the update raised most ({result.metric.upper()}), "
            f"the first ten: {top}.{typed}")


def _found_by(row) -> str:
    """Which search found a row; a seeded beam's row says the end of the context it followed."""
    return f"{row.found_by} after “…{row.seed[-40:]}”" if row.seed else row.found_by


def section(result) -> str:
    shown = result.rows[:20]
    rows = [(r.rank + 1, r.phrase, r.ds, r.rds, _found_by(r)) for r in shown]
    return ("<h3>The sequences the update raised most</h3>"
            + table(*with_public(("rank", "sequence", "DS", "RDS", "found by"), rows,
                                 [r.public for r in shown])))


AUDIT = AuditHooks(
    needs=("model", "reference"),
    fields={"after": "model", "before": "reference"},
    verdict=verdict, section=section,
    series={"top_ds": "top differential score", "top_rds": "top relative differential score",
            "phrase_rank": "rank of the typed phrase (0: first)"},
    order=20)
