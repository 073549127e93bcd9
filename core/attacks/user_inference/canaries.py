"""Canary users (Kandpal et al. 2023, §4.3 and App. D.2, Algorithm 1).

A canary user is a real user whose every sample carries one shared substring taken from one of
their own samples, like an email signature; trained on, such users are far easier to detect.
``build_canary_users`` makes a copy of a user-samples file with canary users; the spec
``user-inference-canaries`` writes that copy to a file.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from core import paths
from core.attacks.user_inference.samples import Sample, group_by_user, load_samples, write_samples
from core.errors import UserError
from core.runtime import Progress, check_cancel, no_progress
from core.specs import AttackSpec, check_params, param

FORMATS = {".csv": "csv", ".jsonl": "jsonl"}


@dataclass
class CanaryUser:
    user_id: str
    substring: str
    words: int
    samples: int


def insert_at_random(text: str, substring: str, rng: random.Random) -> str:
    """``substring`` inserted at a random word boundary of ``text`` (Algorithm 1's insertion)."""
    pieces = text.split(" ")
    at = rng.randrange(len(pieces) + 1)
    return " ".join(pieces[:at] + [substring] + pieces[at:])


def _choose(by_user: dict[str, list[Sample]], words: int, count: int,
            user_ids: list[str] | None, rng: random.Random) -> list[str]:
    """The canary users: ``user_ids`` (checked), else ``count`` drawn uniformly among the users
    not yet canaries that have a sample of at least ``words`` words."""
    long_enough = [u for u, items in by_user.items()
                   if not items[0].canary and any(len(s.text.split()) >= words for s in items)]
    if user_ids:
        unknown = [u for u in user_ids if u not in by_user]
        if unknown:
            raise UserError(f"no such user(s) in the data: {', '.join(unknown[:5])}")
        short = [u for u in user_ids if u not in long_enough]
        if short:
            raise UserError(f"user(s) {', '.join(short[:5])} have no sample of {words} words (or are "
                            "canaries already): choose others or a shorter substring")
        return list(dict.fromkeys(user_ids))
    if not 1 <= count <= len(long_enough):
        raise UserError(f"{count} canary users asked, but {len(long_enough)} users have a "
                        f"sample of at least {words} words")
    return rng.sample(long_enough, count)


def build_canary_users(samples: list[Sample], *, words: int, count: int = 1,
                       user_ids: list[str] | None = None,
                       seed: int = 0) -> tuple[list[dict], list[CanaryUser]]:
    """Kandpal et al. Algorithm 1 on a copy of a dataset: for each canary user (``user_ids``,
    else ``count`` users drawn uniformly among those not yet canaries), draw one of their
    samples with at least ``words`` words, draw a contiguous ``words``-word substring of it, and
    insert that substring at a random position of every sample of the user. Returns the
    copy's records (``user_id``, ``text``, ``member`` when known, ``canary``) and the canaries.
    Substrings are counted in words (whitespace-separated), not model tokens, so the copy does
    not depend on a tokenizer."""
    if words < 1:
        raise UserError(f"the shared substring needs at least one word, not {words}")
    by_user = group_by_user(samples)
    rng = random.Random(seed)
    canaries, texts = [], {}
    for user in _choose(by_user, words, count, user_ids, rng):
        source = rng.choice([s.text.split() for s in by_user[user] if len(s.text.split()) >= words])
        start = rng.randrange(len(source) - words + 1)
        substring = " ".join(source[start: start + words])
        texts[user] = [insert_at_random(s.text, substring, rng) for s in by_user[user]]
        canaries.append(CanaryUser(user, substring, words, len(texts[user])))
    position = defaultdict(int)
    records = []
    for s in samples:
        text = s.text
        if s.user_id in texts:
            text = texts[s.user_id][position[s.user_id]]
            position[s.user_id] += 1
        record = {"user_id": s.user_id, "text": text}
        if s.member is not None:
            record["member"] = s.member
        records.append(record | {"canary": bool(s.canary) or s.user_id in texts})
    return records, canaries


# ---------------------------------------------------------------- the spec


@dataclass(frozen=True)
class CanariesConfig:
    """A user-samples file, the canary users to make in a copy of it, and where to write it."""

    data: str = param("", help="CSV or JSONL of user samples: user_id, text, optional member",
                      path="data")
    words: int = param(8, ge=1, le=100, widget="slider", label="shared substring (words)",
                       help="words in each canary user's shared substring (Kandpal et al.: "
                            "1 to 100 tokens)")
    count: int = param(1, ge=1, le=100_000, label="canary users (drawn at random)",
                       help="canary users drawn at random among those with a long enough sample")
    users: tuple[str, ...] = param((), help="these user ids instead of a random draw")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the draws")
    out: str = param("", help="where to write the copy (.csv or .jsonl); empty: a .jsonl file "
                              "under the lab home named by these settings", path="output")

    def __post_init__(self) -> None:
        check_params(self)
        if not self.data.strip():
            raise UserError("choose a file of user samples (user_id, text, optional member)")
        if self.out.strip() and Path(self.out.strip()).suffix.lower() not in FORMATS:
            raise UserError(f"out must end in .csv or .jsonl, not {Path(self.out).name!r}")


@dataclass
class CanariesResult:
    out: str                   # the file written
    samples: int               # records in the copy
    canaries: list[CanaryUser]


def output_path(config: CanariesConfig) -> Path:
    """``config.out``, or a file under ``home()/user-inference/canary-copies`` named by a hash of
    the settings (the same settings write the same copy)."""
    if config.out.strip():
        return Path(config.out.strip()).expanduser()
    key = json.dumps([config.data, config.words, config.count, list(config.users), config.seed])
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.home() / "user-inference" / "canary-copies" / f"{name}.jsonl"


def run(config: CanariesConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> CanariesResult:
    """Algorithm 1 on a copy of ``config.data``, written to ``output_path(config)``."""
    check_cancel(cancel)
    progress(0.0, "reading the samples")
    samples = load_samples(config.data)
    check_cancel(cancel)
    records, canaries = build_canary_users(samples, words=config.words, count=config.count,
                                           user_ids=list(config.users) or None, seed=config.seed)
    out = output_path(config)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(write_samples(records, FORMATS[out.suffix.lower()]), encoding="utf-8")
    progress(1.0, f"{len(canaries)} canary users written to {out.name}")
    return CanariesResult(str(out), len(records), canaries)


def tiny_config() -> CanariesConfig:
    """Two canary users among six small users, written under ``home()/tiny``."""
    folder = paths.home() / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "canary-users-samples.jsonl"
    records = [{"user_id": f"u{u}", "text": f"user {u} wrote sample {i} of a short test text",
                "member": u % 2 == 0} for u in range(6) for i in range(3)]
    data.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    return CanariesConfig(data=str(data), words=3, count=2,
                          out=str(folder / "canary-users-copy.jsonl"))


SPEC = AttackSpec(
    name="user-inference-canaries",
    title="Canary users (Kandpal et al. 2023, Algorithm 1)",
    config_type=CanariesConfig,
    result_type=CanariesResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {"samples": r.samples, "canary_users": len(r.canaries)},
    describe=lambda c: f"canary users: {c.words}-word substring in {Path(c.data).name}",
)
