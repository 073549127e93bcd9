"""Views of an extraction result for people: its headline numbers, one ranking as table rows,
and where given phrases (e.g. a scenario's planted secret and canaries) occur in the rankings."""

from __future__ import annotations

from core.attacks.extraction.config import ExtractionResult


def headline(result: ExtractionResult) -> dict[str, float]:
    """Samples, candidates verified memorised, and the best ranking's precision (if verified)."""
    numbers = {"samples": sum(result.generated.values()),
               "memorized": sum(bool(c.memorized) for c in result.candidates),
               "tokens_per_s": result.tokens_per_s}
    precisions = [p for by_metric in result.precision.values() for p in by_metric.values()
                  if p is not None]
    return numbers | ({"best_precision": max(precisions)} if precisions else {})


def ranked_rows(result: ExtractionResult, strategy: str, metric: str) -> list[dict]:
    """One ranking, best first: rank, candidate id, the metric's score, perplexities,
    verification and text."""
    by_id = {c.id: c for c in result.candidates}
    rows = []
    for rank, i in enumerate(result.rankings.get(strategy, {}).get(metric, []), start=1):
        c = by_id[i]
        rows.append({"rank": rank, "id": i, "score": c.scores[metric], "perplexity": c.perplexity,
                     "reference_perplexity": c.reference_perplexity, "zlib_bits": c.zlib_bits,
                     "memorized": c.memorized, "k_eidetic": c.k_eidetic or None,
                     "span_tokens": c.span_tokens or None, "text": c.text})
    return rows


def phrase_hits(result: ExtractionResult, phrases: list[str]) -> dict[str, list[str]]:
    """Where each phrase occurs verbatim in a ranking, as "strategy/metric #rank" (e.g. a
    scenario's planted secret and canaries)."""
    by_id = {c.id: c.text for c in result.candidates}
    return {phrase: [f"{strategy}/{metric} #{rank}"
                     for strategy, by_metric in result.rankings.items()
                     for metric, ids in by_metric.items()
                     for rank, i in enumerate(ids, start=1) if phrase in by_id[i]]
            for phrase in phrases}
