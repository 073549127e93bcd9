"""The personal data an extraction run's samples hold (``core.pii``), and which of it the
training corpus holds too: the PII the model reproduced (Lukas et al., S&P 2023, count the
distinct training PII values its samples contain)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from core.attacks.extraction.config import ExtractionResult, PiiFound
from core.pii import find_pii, pii_values


def mark_pii(result: ExtractionResult, token_ids: dict[int, tuple[np.ndarray, int]], tokenizer,
             corpus: list[str] | None) -> None:
    """Set each candidate's ``pii`` (in what was generated, not a given prompt or prefix) and
    ``result.pii``: each distinct value, its candidates, and whether ``corpus`` holds it (None
    without a corpus); values from the training data first, then the most sampled."""
    holders: dict[tuple[str, str], list[int]] = defaultdict(list)
    for c in result.candidates:
        ids, start = token_ids[c.id]
        generated = tokenizer.decode(ids[max(start, c.prompt_tokens):].tolist())
        found = sorted({(p.kind, p.value) for p in find_pii(generated)})
        c.pii = [f"{kind}: {value}" for kind, value in found]
        for pair in found:
            holders[pair].append(c.id)
    trained = pii_values(corpus) if corpus is not None else None
    result.pii = sorted((PiiFound(kind, value, ids, None if trained is None else
                                  (kind, value) in trained)
                         for (kind, value), ids in holders.items()),
                        key=lambda f: (not f.in_training, -len(f.candidates), f.kind, f.value))
