"""In-domain seeds for differential rank's beam search: the text before a line, a sentence or a
trained turn begins, so that the beam can start where a record starts, not only at a document's.

§2.4's beam search reads every sequence after the context token, a document's start. There a
planted record's first words ("The", "My") can score *below* zero, since the base opens
documents with them more often than the update does, and the beam prunes them before the words
that follow, however high those score (issue #45). Read after in-domain text that ends a line
or a sentence, the same words are scored where the record sat in the update's data. A seed is
the ``width`` tokens before such a start in one of the texts the run reads (the public
in-domain sample, the text sample, or the updated model's own samples); for a sample of a
fine-tuner's rows (``core.chat``), the starts are where each trained span begins, so a seed is
the conversation before a reply. ``count`` seeds are drawn, in turn from each source, seeded.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

SEED_TOKENS = 16          # tokens of context before each start
ENDINGS = (".", "!", "?", ":", ";", "\n")   # a token ending so is followed by a start


@dataclass(frozen=True)
class Seed:
    """A context the beam may start after: its token ids and the source it was read in."""

    ids: tuple[int, ...]
    source: str


def _ends_a_unit(tokenizer, ids: Sequence[int]) -> dict[int, bool]:
    """Whether each distinct token's text ends a line or a sentence (each decoded once)."""
    texts = {i: tokenizer.decode([i]) for i in set(ids)}
    return {i: text.endswith("\n") or text.rstrip(" \t\"')]").endswith(ENDINGS)
            for i, text in texts.items()}


def start_positions(ids: Sequence[int], ends: dict[int, bool],
                    trained: Sequence[bool] | None = None) -> list[int]:
    """Positions past a text's first token where a line or sentence begins (after a token that
    ends one), or, with a trained mask, where each trained span begins."""
    if trained is not None:
        return [i for i in range(1, len(ids)) if trained[i] and not trained[i - 1]]
    return [i for i in range(1, len(ids)) if ends[ids[i - 1]]]


def seed_contexts(sources: dict[str, list[list[int]]], tokenizer, *, count: int, pad: int,
                  width: int = SEED_TOKENS, seed: int = 0,
                  trained: dict[str, list] | None = None) -> list[Seed]:
    """Up to ``count`` distinct seeds of ``width`` tokens, drawn in turn from each source
    (name → token ids of its texts; ``trained``: name → each text's trained mask); a start
    fewer than ``width`` tokens into its text has its seed led by ``pad`` tokens (the context
    token: a document boundary, as texts are joined in training streams)."""
    rng = random.Random(seed)
    pools = []
    for name, texts in sources.items():
        masks = (trained or {}).get(name)
        ends = _ends_a_unit(tokenizer, [i for ids in texts for i in ids]) if masks is None else {}
        found = {(pad,) * max(0, width - at) + tuple(ids[max(0, at - width): at])
                 for n, ids in enumerate(texts)
                 for at in start_positions(ids, ends, None if masks is None else masks[n])}
        pool = [Seed(ids, name) for ids in sorted(found)]
        rng.shuffle(pool)
        pools.append(pool)
    chosen: dict[tuple[int, ...], Seed] = {}
    for turn in range(max((len(p) for p in pools), default=0)):
        for pool in pools:
            if len(chosen) < count and turn < len(pool):
                chosen.setdefault(pool[turn].ids, pool[turn])
    return list(chosen.values())
