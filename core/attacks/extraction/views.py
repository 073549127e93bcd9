"""Views of an extraction result for people: its headline numbers, one ranking as table rows,
where given phrases (e.g. a scenario's planted secret and canaries) occur in the rankings, and
how extractable each memorised span and tracked phrase is (p_z, n, b)."""

from __future__ import annotations

from core.attacks.extraction.config import ExtractionResult
from core.attacks.extraction.extractability import PROBABILITY
from core.attacks.inextractability.views import log2_shown, samples_shown
from core.calibration.public import public_label

PREFIX_SHOWN = 60   # characters of a span's prefix or a prompt shown (its end)


def headline(result: ExtractionResult) -> dict[str, float]:
    """Samples, candidates verified memorised, and the best ranking's precision (if verified)."""
    numbers = {"samples": sum(result.generated.values()),
               "memorized": sum(bool(c.memorized) for c in result.candidates),
               "tokens_per_s": result.tokens_per_s}
    precisions = [p for by_metric in result.precision.values() for p in by_metric.values()
                  if p is not None]
    trained_pii = sum(bool(f.in_training) for f in result.pii)
    return (numbers | ({"best_precision": max(precisions)} if precisions else {})
            | ({"pii_from_training": trained_pii} if result.corpus else {}))


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
                     "span_tokens": c.span_tokens or None, "pii": ", ".join(c.pii) or None,
                     "text": c.text}
                    | ({"prompt": _tail(c.prompt)} if c.prompt else {})
                    | ({"public sample": public_label(c.public)} if c.public else {}))
    return rows


def _tail(text: str) -> str:
    """The end of a text on one line (a span's prefix, a chat reply's prompt)."""
    text = " ".join(text.split())
    return text if len(text) <= PREFIX_SHOWN else "…" + text[-PREFIX_SHOWN:]


def phrase_hits(result: ExtractionResult, phrases: list[str]) -> dict[str, list[str]]:
    """Where each phrase occurs verbatim in a ranking, as "strategy/metric #rank" (e.g. a
    scenario's planted secret and canaries)."""
    by_id = {c.id: c.text for c in result.candidates}
    return {phrase: [f"{strategy}/{metric} #{rank}"
                     for strategy, by_metric in result.rankings.items()
                     for metric, ids in by_metric.items()
                     for rank, i in enumerate(ids, start=1) if phrase in by_id[i]]
            for phrase in phrases}


def extractability_rows(result: ExtractionResult, *, replies: bool = False) -> list[dict]:
    """Each memorised span (then each tracked phrase), or each trained reply of a chat run:
    its strategy, b (bits), log2 p_z under the strategy's sampling, the samples n, the span,
    the end of the text before it, the model's own log2 p and the worst rank."""
    def found(e) -> str:
        return ("trained reply" if replies else
                "tracked phrase" if e.candidate is None else f"candidate {e.candidate}")

    return [{"found": found(e), "strategy": e.strategy, "b (bits)": round(e.b, 3),
             "log2 p_z": log2_shown(e.log2_p),
             f"samples for P ≥ {PROBABILITY:g}": samples_shown(e.samples_50),
             "span or phrase": e.suffix, "after": _tail(e.prefix) or "(start of a sample)", "tokens": e.suffix_tokens,
             "log2 p (model)": round(e.log2_p_model, 3), "worst rank": e.max_rank}
            for e in (result.replies if replies else result.extractability)]


def pii_rows(result: ExtractionResult) -> list[dict]:
    """Each personal-data value the samples hold: its kind, value, whether the training corpus
    holds it, and how many candidates (the first few ids)."""
    return [{"kind": f.kind, "value": f.value, "in training data": f.in_training,
             "candidates": len(f.candidates), "ids": ", ".join(map(str, f.candidates[:8]))}
            for f in result.pii]
