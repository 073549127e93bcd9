"""The demo's member/non-member document set, for membership inference with ground truth.

Members are speeches the updated model was fine-tuned on (held-in users' training speeches);
non-members are speeches of the *same* users that were never trained on (their attacker
samples: the demo split draws both at random from each user's speeches). For every held-in
real user as many training speeches are drawn as they have attacker samples, so both classes
have the same speakers, plays and length distribution: only training tells them apart, and a
model-free classifier should do no better than chance (Das, Zhang & Tramèr 2024).

Derived from the build's files on first use and written beside them (atomically), so it needs
no rebuild; a new build replaces the folder and the file is derived again.
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path

from core.demo import paths

FILE = "data/membership.jsonl"
SEED = 0


def _records(root: Path) -> list[dict]:
    trained: dict[str, list[str]] = defaultdict(list)
    with open(paths.data_file("private_train", root)) as f:
        for row in map(json.loads, f):
            if row["kind"] == "user":
                trained[row["user_id"]].append(row["text"])
    held_out: dict[str, list[str]] = defaultdict(list)
    with open(paths.data_file("user_samples", root)) as f:
        for row in map(json.loads, f):
            if row.get("member") and not row.get("canary") and row["user_id"] in trained:
                held_out[row["user_id"]].append(row["text"])
    rng = random.Random(SEED)
    records = []
    for user in sorted(held_out):
        members = sorted(set(trained[user]))
        rng.shuffle(members)
        for text in members[: len(held_out[user])]:
            records.append({"text": text, "member": True, "group": user})
        records += [{"text": text, "member": False, "group": user} for text in held_out[user]]
    rng.shuffle(records)
    return records


def membership_file(root: Path | None = None) -> Path:
    """The demo's member/non-member set (``text``, ``member``, ``group`` = the speaker)."""
    folder = Path(root or paths.demo_root())
    paths.load_manifest(folder)   # a clear error when the demo is not built
    target = folder / FILE
    if not target.exists():
        staging = target.with_name(f".{target.name}.{os.getpid()}")
        staging.write_text("".join(json.dumps(r) + "\n" for r in _records(folder)))
        os.replace(staging, target)
    return target
