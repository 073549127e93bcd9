"""What the audit takes of extraction: its inputs, its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations

import html
from typing import Any

from core.attacks.extraction.views import extractability_rows, pii_rows
from core.calibration.public import with_public
from core.reporting.html import table, short
from core.specs import AuditHooks

VERDICT_SPANS = 5   # the longest memorised spans an extraction verdict names
EXTRACTABILITY_SPANS = 10   # memorised spans whose p_z and b the report lists


def verdict(result) -> str:
    found = sorted((c for c in result.candidates if c.memorized),
                   key=lambda c: (-c.span_tokens, -c.k_eidetic))
    if not result.corpus:
        return (f"{sum(result.generated.values()):,} samples generated and ranked; with no "
                "training corpus given nothing could be verified as memorised.")
    if not found:
        return (f"No verbatim training text found among {len(result.candidates):,} ranked "
                f"candidates (spans of at least {result.min_span_tokens} tokens).")
    spans: dict[str, Any] = {}
    for candidate in found:   # the longest spans, none a part of one already kept
        span = candidate.span.strip()
        if not any(span in kept for kept in spans):
            spans[span] = candidate
    shown = "; ".join(f"“{span}” ({c.span_tokens} tokens, in {c.k_eidetic} training "
                      f"document{'s' if c.k_eidetic != 1 else ''})"
                      for span, c in list(spans.items())[:VERDICT_SPANS])
    return (f"{len(found)} extracted candidates hold verbatim training text: {len(spans)} "
            f"distinct passages were extracted verbatim and are memorised. The longest: {shown}.")


def section(result) -> str:
    """The ten longest distinct memorised spans, each once with the samples that hold it, and
    the precision of every ranking."""
    spans: dict[str, list] = {}
    for c in sorted((c for c in result.candidates if c.memorized),
                    key=lambda c: (-c.span_tokens, -c.k_eidetic)):
        spans.setdefault(" ".join((c.span or "").split()), []).append(c)
    rows = [(found[0].span_tokens, found[0].k_eidetic, len(found),
             ", ".join(sorted({c.strategy for c in found})), short(span), short(found[0].text))
            for span, found in list(spans.items())[:10]]
    headers = ("span tokens", "training documents", "samples holding it", "strategies", "span",
               "one of those samples")
    precision = [(strategy, metric, "—" if p is None else f"{p:.2f}")
                 for strategy, by in result.precision.items() for metric, p in by.items()]
    return ("<h3>Memorised passages (longest verbatim span first)</h3>"
            + table(*with_public(headers, rows, [found[0].public
                                                 for found in list(spans.values())[:10]]))
            + extractability_section(result) + pii_section(result)
            + "<h3>Precision of each ranking (memorised fraction of its top candidates)</h3>"
            + table(("strategy", "metric", "precision"), precision))


def extractability_section(result) -> str:
    """p_z, n and b of the first memorised spans and of every tracked phrase ("" without)."""
    rows = extractability_rows(result)
    spans = [r for r in rows if r["found"] != "tracked phrase"][:EXTRACTABILITY_SPANS]
    shown = spans + [r for r in rows if r["found"] == "tracked phrase"]
    if not shown:
        return ""
    return ("<h3>How extractable: p_z under the run's sampling and b in bits</h3>"
            + table(list(shown[0]), [[short(str(v)) for v in r.values()] for r in shown])
            + f"<p class='muted'>{html.escape(result.extractability_scheme)} p_z: the chance "
            "one sample reproduces it (Hayes et al. 2025); b: its cost in bits when the "
            "attacker tries the model's top m tokens in order (Liu, Evans &amp; Xiong 2026).</p>")


def pii_section(result) -> str:
    """The personal data the samples hold, the training data's first ("" without)."""
    rows = pii_rows(result)
    if not rows:
        return ""
    return ("<h3>Personal data in the samples (training data's first)</h3>"
            + table(list(rows[0]), [[short(str(v)) for v in r.values()] for r in rows[:20]]))


AUDIT = AuditHooks(
    needs=("model",),
    fields={"model": "model", "reference": "reference", "corpus": "corpus"},
    verdict=verdict, section=section,
    series={"memorized": "memorised candidates",
            "best_precision": "best precision of a ranking",
            "pii_from_training": "training PII values reproduced"},
    order=10)
