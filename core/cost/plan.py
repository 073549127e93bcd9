"""A run's ``Plan``: the ``Work`` items (``core.cost.work``) and the assumptions behind their
sizes, and the pieces each spec's cost builds it from (loads, scoring passes, generation, files
read, the bootstrap). Each spec's own cost lives beside it (e.g. ``core.attacks.mia``'s in
``core/attacks/membership/cost.py``) and is declared with ``AttackSpec(cost=...)``. Nothing
here loads a weight: models are sized from their configs, texts read and a sample of them
tokenised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from core.cost.sizes import ModelSize, Texts, text_stats
from core.cost.work import SCORE_ROWS, Work
from core.readers.data import read_texts

BOOTSTRAP_S = 8e-8        # per resample and text: one vectorised AUROC (bench.bench_membership_eval)
UPPER_BOUND = ("samples run to the most tokens allowed (no corpus to tell their length): an "
               "upper bound when they end early")


@dataclass
class Plan:
    works: list[Work] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def add(self, other: Plan) -> Plan:
        self.works += other.works
        self.assumptions += [a for a in other.assumptions if a not in self.assumptions]
        return self


def load(size: ModelSize) -> Work:
    return Work("load", f"load {size.source} ({size.parameters:,} parameters)", size)


def scoring(size: ModelSize, texts: Texts, what: str, passes: float = 1) -> Work:
    """``passes`` scoring passes of ``texts`` under ``size``'s model."""
    tokens = texts.forward * passes
    return Work("score", f"score {what}: {tokens:,.0f} tokens under {size.source}", size,
                tokens=tokens, calls=math.ceil(tokens / SCORE_ROWS), rows=min(SCORE_ROWS, tokens),
                length=texts.length / 2, sequences=texts.count * passes)


def generation(size: ModelSize, samples: int, tokens: int, batch: int, prompt: float = 0,
               length: float | None = None) -> Work:
    """``samples`` samples of at most ``tokens`` new tokens (``length`` on average, default all)
    after ``prompt`` tokens, ``batch`` at once: a batch runs until its longest sample ends,
    taken to be ``tokens`` steps."""
    length = tokens if length is None else length
    return Work("generate", f"generate {samples:,} samples x {length:,.0f} tokens (at most "
                f"{tokens:,}) with {size.source}", size, tokens=samples * length,
                calls=math.ceil(samples / batch) * tokens, rows=min(batch, samples),
                length=prompt + length / 2)


def sample_length(documents: str, size: ModelSize, room: int) -> tuple[float, list[str]]:
    """Mean new tokens of a sample and the assumption made: as long as the documents the model
    was trained on (a file of them, e.g. its training corpus) with their end-of-text, at most
    ``room``; ``room`` without such a file (an upper bound)."""
    if not documents.strip():
        return room, [UPPER_BOUND]
    texts = text_stats(read_texts(documents), size)
    mean = min(room, texts.tokens / max(texts.count, 1))
    return mean, [f"samples as long as the documents of {documents} ({mean:.0f} tokens on "
                  f"average, at most {room})", *token_note(texts)]


def reading(documents: str) -> Work:
    """Reading and tokenising a file of documents outside the models' work."""
    count = len(read_texts(documents))
    return Work("text", f"read and tokenise {count:,} documents of {documents}", sequences=count)


def generated_texts(samples: int, tokens: float) -> Texts:
    return Texts(samples, samples * tokens, samples * tokens, tokens, True)


def token_note(texts: Texts) -> list[str]:
    return [] if texts.measured else ["tokens counted as 4 characters each (no tokenizer file "
                                      "at hand)"]


def bootstrap(resamples: int, texts: int, evaluations: int) -> Work:
    seconds = resamples * texts * evaluations * BOOTSTRAP_S
    return Work("cpu", f"bootstrap: {evaluations} x {resamples:,} resamples of {texts:,}",
                seconds=seconds)


