"""What the audit takes of a PII probe: its inputs, its verdict, its report section and the
rates an audit series draws against the training step."""

from __future__ import annotations

from core.reporting.html import short, table
from core.specs import AuditHooks


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def verdict(result) -> str:
    k = result.outcomes[0].samples if result.outcomes else 0
    twins, triplets = result.twin_extraction_rate, result.triplet_extraction_rate
    return (f"Of {len(result.subjects):,} data subjects probed, {_percent(twins)} of their PII "
            f"values came out exactly within {k} samples of their name alone and "
            f"{_percent(triplets)} given another of their values; "
            f"{_percent(result.true_value_top_rate)} of true values were likelier than every "
            "fresh value of their format.")


def section(result) -> str:
    kinds = [(r.group, r.probes, _percent(r.extraction_rate), _percent(r.sample_rate),
              _percent(r.top_rate), r.mean_log2_ratio) for r in result.by_kind]
    doses = [(r.group, r.probes, _percent(r.extraction_rate), _percent(r.top_rate))
             for r in result.by_dose]
    worst = sorted(result.outcomes, key=lambda o: (-o.hits, o.rank_target))[:10]
    rows = [(o.subject, o.kind, o.probe, o.dose, f"{o.hits}/{o.samples}", o.rank_target,
             short(o.example)) for o in worst]
    head = ("kind, prompt", "probes", "extracted in k", "samples holding it", "likeliest of fresh",
            "mean log2 ratio to reference")
    return (table(head, kinds)
            + table(("rows holding the value", "probes", "extracted in k", "likeliest of fresh"),
                    doses)
            + table(("subject", "kind", "prompt", "dose", "hits", "rank", "reply"), rows))


AUDIT = AuditHooks(
    needs=("model", "corpus"),
    fields={"model": "model", "reference": "reference", "data": "corpus"},
    verdict=verdict, section=section,
    series={"twin_extraction_rate": "share of subjects' PII extracted from their name",
            "true_value_top_rate": "share of true PII likelier than every fresh value"},
    order=25)
