"""Mitigations of user inference on a fine-tuning set of user-keyed records (Kandpal et al.
2023, §5): within-user deduplication and a per-user sample limit. A record is a dict with a
``text`` and a ``user_id`` (None: not a user's record, kept as it is)."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np


def dedup_within_user(records: list[dict], *, words: int = 8) -> list[dict]:
    """Within-user deduplication (Kandpal §5; Lee et al. 2022's ExactSubstr, per user and at
    word level): going through each user's records in order, every run of ``words`` words
    already present in an earlier record of the same user is deleted (so exact duplicates
    of texts of at least ``words`` words vanish), as are exact duplicate texts. A record left
    empty is dropped; records without a ``user_id`` are kept as they are."""
    seen: dict[str, set] = defaultdict(set)
    seen_texts: dict[str, set] = defaultdict(set)
    out = []
    for record in records:
        user = record.get("user_id")
        if user is None:
            out.append(record)
            continue
        if record["text"] in seen_texts[user]:
            continue
        seen_texts[user].add(record["text"])
        parts = re.split(r"(\s+)", record["text"])   # words at even positions, spaces between
        tokens = parts[0::2]
        grams = [tuple(tokens[i: i + words]) for i in range(len(tokens) - words + 1)]
        drop = np.zeros(len(tokens), dtype=bool)
        for i, gram in enumerate(grams):
            if gram in seen[user]:
                drop[i: i + words] = True
        seen[user].update(grams)
        kept = "".join(parts[2 * i] + (parts[2 * i + 1] if 2 * i + 1 < len(parts) else "")
                       for i in range(len(tokens)) if not drop[i]).strip()
        if kept:
            out.append(record | {"text": kept})
    return out


def limit_per_user(records: list[dict], *, limit: int) -> list[dict]:
    """At most ``limit`` records per user (the first ones in the file's order; the demo's
    training file is shuffled); records without a ``user_id`` are kept (Kandpal §5)."""
    counts: dict[str, int] = defaultdict(int)
    out = []
    for record in records:
        user = record.get("user_id")
        if user is not None:
            counts[user] += 1
            if counts[user] > limit:
                continue
        out.append(record)
    return out
