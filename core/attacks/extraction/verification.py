"""Verification of extracted candidates against a training corpus (Carlini et al. 2021).

A candidate is memorised when it holds a verbatim span of at least ``span`` tokens of a corpus
document; its k-eidetic count is the number of documents holding that span (Definition 2).
Each ranking gets its precision: the fraction of its candidates that are memorised (Table 3).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from core.attacks.extraction.config import ExtractionResult
from core.errors import UserError


class CorpusIndex:
    """Verbatim spans of ``span`` tokens of a corpus, to verify candidates (token n-gram hashes)."""

    def __init__(self, tokenizer, documents: list[str], span: int):
        if span < 1:
            raise UserError("the verbatim span must be at least 1 token")
        self.tokenizer, self.span = tokenizer, span
        self.docs = [np.asarray(d, dtype=np.int64)
                     for d in tokenizer(documents, add_special_tokens=False)["input_ids"]]
        self.grams: dict[bytes, list[int]] = defaultdict(list)
        for number, doc in enumerate(self.docs):
            for start in range(len(doc) - span + 1):
                holders = self.grams[doc[start: start + span].tobytes()]
                if not holders or holders[-1] != number:
                    holders.append(number)

    def find(self, text: str, prompt_tokens: int = 0) -> tuple[str | None, int, int]:
        """The longest run of the text's span-grams found in the corpus, as (span text, span
        tokens, k-eidetic count: documents holding the whole span); (None, 0, 0) if none.
        Spans within the first ``prompt_tokens`` tokens (a given prefix, not generated) are
        not counted."""
        ids = np.asarray(self.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)
        hits = [i + self.span > prompt_tokens and ids[i: i + self.span].tobytes() in self.grams
                for i in range(len(ids) - self.span + 1)]
        best_start, best_len, run = 0, 0, 0
        for i, hit in enumerate(hits):
            run = run + 1 if hit else 0
            if run > best_len:
                best_start, best_len = i - run + 1, run
        if not best_len:
            return None, 0, 0
        span_ids = ids[best_start: best_start + best_len + self.span - 1]
        holders = self.grams[span_ids[: self.span].tobytes()]
        count = sum(_contains(self.docs[d], span_ids) for d in holders)
        return self.tokenizer.decode(span_ids.tolist()), len(span_ids), max(count, 1)


def _contains(doc: np.ndarray, part: np.ndarray) -> bool:
    """True when ``part`` occurs as a contiguous run of ``doc`` (both int64)."""
    haystack, needle, at = doc.tobytes(), part.tobytes(), 0
    while (at := haystack.find(needle, at)) >= 0:
        if at % 8 == 0:
            return True
        at += 1
    return False


def precision_table(result: ExtractionResult,
                    marks: dict[int, bool] | None = None) -> dict[str, dict[str, float | None]]:
    """strategy -> metric -> fraction of the ranking's candidates marked memorised (None for an
    empty ranking): the verification's marks, overridden by ``marks`` (candidate id -> marked
    by hand)."""
    memorized = {c.id: bool(c.memorized) for c in result.candidates} | dict(marks or {})
    return {strategy: {metric: (sum(memorized.get(i, False) for i in ids) / len(ids)
                                if ids else None)
                       for metric, ids in by_metric.items()}
            for strategy, by_metric in result.rankings.items()}
