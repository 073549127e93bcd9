"""The sentence sets of a lazy-risk run: read, de-duplicated, tokenised, or generated.

A set is a data file of plain texts (every token scored, after the context token) or of a
fine-tuner's rows (``core.chat``): each row rendered with the target's chat template, its
trained tokens (the assistant's replies, the completions) scored with the rest of the row as
context, so that λ(x) is the probability of the sampler writing the reply to its prompt.
The generated set of such a file holds the sampler's own replies to a draw of its prompts.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

import numpy as np

from core import chat
from core.attacks.lazy_risk.config import plain_units
from core.readers.data import read_texts
from core.generation.sampling import generate
from core.models import LoadedModel
from core.runtime import Progress


@dataclass(frozen=True)
class Sentence:
    """A distinct sentence of a set: its token ids, its text, its copies in the set and, for a
    rendered row, which tokens training learnt from (None: a plain text, every token)."""

    ids: list[int]
    text: str
    copies: int
    trained: np.ndarray | None = None

    def scored(self, first_scored: int) -> np.ndarray:
        """Which of its scored tokens count (its log-probabilities start at ``first_scored``)."""
        if self.trained is None:
            return np.ones(len(self.ids) - first_scored, dtype=bool)
        return self.trained[first_scored:]

    @property
    def prompt(self) -> list[int]:
        """Its tokens before the first trained one (a rendered row's generation prompt)."""
        first = int(np.argmax(self.trained)) if self.trained is not None else 0
        return self.ids[:first]


def holds(sentence: str, tracked: str) -> bool:
    """Whether a training sentence holds a tracked text (the whole sentence, or a part of it)."""
    return tracked.strip() in sentence


def _distinct(texts: list[str], limit: int, rng: np.random.Generator, name: str,
              notes: list[str], keep: tuple[str, ...]) -> list[int]:
    """The index of the first copy of each distinct text; beyond ``limit`` of them, those holding
    a ``keep`` text (the tracked sentences must be ranked) and a random draw of the others."""
    first = list({text: i for i, text in reversed(list(enumerate(texts)))}.values())[::-1]
    if len(first) <= limit:
        return first
    notes.append(f"{name}: a random {limit:,} of its {len(first):,} distinct sentences")
    kept = [i for i in first if any(holds(texts[i], k) for k in keep)][:limit]
    others = np.setdiff1d(first, kept)
    drawn = rng.choice(others, size=limit - len(kept), replace=False).tolist()
    return sorted(kept + drawn)


def read_set(source: str, name: str, target: LoadedModel, *, mask: str, template: str,
             limit: int, rng: np.random.Generator, notes: list[str],
             keep: tuple[str, ...] = (), unit: str = "text") -> list[Sentence]:
    """The distinct sentences of a file (at most ``limit``), each with its copies."""
    rendered = chat.source_sequences(source, target, mask=mask, template=template)
    if rendered and unit != "text":
        notes.append(f"{name}: a fine-tuner's rows stay whole (a sentence is a row, not a line)")
    texts = [r.text for r in rendered] if rendered else plain_units(read_texts(source), unit)
    copies = Counter(texts)
    chosen = _distinct(texts, limit, rng, name, notes, keep)
    if rendered:
        return [Sentence(rendered[i].ids, texts[i], copies[texts[i]], rendered[i].trained)
                for i in chosen]
    ids = target.tokenizer([texts[i] for i in chosen], add_special_tokens=False)["input_ids"]
    return [Sentence(list(t), texts[i], copies[texts[i]]) for t, i in zip(ids, chosen)]


def generated_set(target: LoadedModel, sampler, n: int, max_new_tokens: int, *,
                  prompts_from: list[Sentence] | None, batch_size: int, seed: int,
                  progress: Progress, cancel: threading.Event | None,
                  stops: tuple[int, ...] = ()) -> list[Sentence]:
    """``n`` sentences sampled by the attack's sampler: from the context token, or, for
    rendered rows (``prompts_from``), as replies to a seeded draw of their prompts (the
    template's end of turn, in ``stops``, ends one)."""
    pool = [s for s in prompts_from or () if s.prompt]
    if not pool:
        gen = generate(target, sampler, [[] for _ in range(n)], max_new_tokens=max_new_tokens,
                       batch_size=batch_size, seed=seed, cancel=cancel, progress=progress)
        return [Sentence(s.tolist(), target.tokenizer.decode(s.tolist()), 1)
                for s in gen.samples if len(s)]
    rng = np.random.default_rng(seed)
    prompts = [pool[i].prompt for i in rng.integers(len(pool), size=n)]
    gen = generate(target, sampler, prompts, max_new_tokens=max_new_tokens,
                   batch_size=batch_size, seed=seed, cancel=cancel, progress=progress,
                   after_context=False, more_stops=stops)
    out = []
    for sample, length in zip(gen.samples, gen.prompt_lengths):
        if len(sample) > length:
            ids = sample.tolist()
            out.append(Sentence(ids, target.tokenizer.decode(ids), 1, np.arange(len(ids)) >= length))
    return out
