"""What the audit gives it (the model and its training corpus), its verdict, its report section
and the measure an audit series draws (``core.specs.AuditHooks``)."""

from __future__ import annotations

import html

from core.specs import AuditHooks


def verdict(result) -> str:
    copies = f"{result.count:,} copies of the canary in the training data"
    if result.canary_loss is None:
        return copies
    gap = result.shuffled_loss - result.canary_loss
    return f"{copies}; the model predicts it {gap:.2f} nats a token better than its shuffle"


def section(result) -> str:
    rows = [("copies", f"{result.count:,}"), ("planted", "yes" if result.planted else "no")]
    if result.canary_loss is not None:
        rows += [("loss of the canary (nats a token)", f"{result.canary_loss:.3f}"),
                 ("loss of its words shuffled", f"{result.shuffled_loss:.3f}")]
    cells = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return f"<table class='canary-count'>{cells}</table>"


AUDIT = AuditHooks(needs=("model", "corpus"), fields={"model": "model", "corpus": "corpus"},
                   verdict=verdict, section=section,
                   series={"canary_loss": "loss of the canary, nats a token"}, order=90)
