"""The demo build's ground truth, typed: ``manifest.json`` (versioned), its data files and the
summary a build returns (``demo show``). Light: no torch, so that resolving the demo's sources
costs nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dacite import DaciteError

from core.demo import corpus
from core.demo.config import MODEL_NAMES, SECRET_PROMPT, DemoConfig
from core.errors import UserError
from core.serialize import from_jsonable, to_jsonable

if TYPE_CHECKING:
    from core.demo.split import Split, User

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1  # raise when the manifest's shape changes: older builds are then rebuilt
REBUILD_HINT = "run `python -m core demo build --force`"


@dataclass
class UserEntry:
    user_id: str                      # "play/SPEAKER"
    play: str
    speaker: str
    n_train_samples: int              # 0 for a held-out user
    attacker_samples: list[str]       # never trained on
    substring: str | None = None      # canary users: the substring all their samples share


@dataclass
class Users:
    held_in: list[UserEntry]
    held_out: list[UserEntry]


@dataclass
class CanaryUsers(Users):
    substring_words: int = 0


@dataclass
class ModelInfo:
    folder: str
    parameters: int
    vocab_size: int
    context: int


@dataclass
class Canary:
    phrase: str
    count: int                        # copies in the private training data


@dataclass
class Secret:
    sentence: str
    prompt: str
    digits: str
    count: int


@dataclass
class Checks:
    """Sanity numbers of one snapshot (natural-log probabilities)."""

    validation_perplexity: float
    secret_logprob: float
    secret_digits_logprob: float      # log p(digits | the secret's prompt)
    canary_logprobs: list[float]


@dataclass
class BuildChecks:
    base: Checks
    updated: Checks
    final_loss: dict[str, float]


@dataclass
class DemoManifest:
    """What a build trained on and planted: the ground truth the attacks are checked against."""

    version: int
    config_hash: str
    config: DemoConfig
    seed: int
    corpus: dict
    plays: dict[str, list[str]]       # public / validation / private
    models: dict[str, ModelInfo]
    tokens: dict[str, int]
    users: Users
    canary_users: CanaryUsers
    canaries: list[Canary]
    secret: Secret
    files: dict[str, str]             # data file key -> path relative to the build
    checks: BuildChecks
    build_seconds: float = 0.0
    root: str = ""                    # the folder it was read from (not stored)


@dataclass
class UserIds:
    held_in: list[str]
    held_out: list[str]


@dataclass
class CanaryUserIds(UserIds):
    substrings: dict[str, str]        # user id -> the substring its samples share


@dataclass
class DemoSummary:
    """The manifest without the per-user samples: what a build returns and ``demo show`` prints."""

    root: str
    config_hash: str
    seed: int
    corpus: dict
    plays: dict[str, list[str]]
    models: dict[str, ModelInfo]
    tokens: dict[str, int]
    canaries: list[Canary]
    secret: Secret
    files: dict[str, str]
    checks: BuildChecks
    build_seconds: float
    users: UserIds
    canary_users: CanaryUserIds


def make_manifest(config: DemoConfig, split: Split, *, parameters: int, vocab_size: int,
                  tokens: dict[str, int], checks: BuildChecks) -> DemoManifest:
    """The manifest of a build of ``config`` (its two models share one architecture)."""
    def entry(u: User) -> UserEntry:
        return UserEntry(u.user_id, u.play, u.speaker, len(u.train_samples) if u.member else 0,
                         u.attacker_samples, u.substring)

    def sides(users: list[User]) -> dict[str, list[UserEntry]]:
        return {"held_in": [entry(u) for u in users if u.member],
                "held_out": [entry(u) for u in users if not u.member]}

    return DemoManifest(
        version=MANIFEST_VERSION, config_hash=config.config_hash(), config=config,
        seed=config.seed, corpus=corpus.corpus_license(), plays=split.plays,
        models={name: ModelInfo(name, parameters, vocab_size, config.n_positions)
                for name in MODEL_NAMES},
        tokens=tokens,
        users=Users(**sides([u for u in split.users if not u.substring])),
        canary_users=CanaryUsers(**sides([u for u in split.users if u.substring]),
                                 substring_words=config.canary_substring_words),
        canaries=[Canary(phrase, count) for phrase, count in config.canaries],
        secret=Secret(split.secret, SECRET_PROMPT, split.secret_digits, config.secret_count),
        files={name: f"data/{name}.jsonl"
               for name in ("private_train", "user_samples", "public_train", "validation")},
        checks=checks,
    )


def write_manifest(folder: Path, manifest: DemoManifest) -> None:
    stored = to_jsonable(manifest)
    del stored["root"]
    (folder / MANIFEST).write_text(json.dumps(stored, indent=1))


def read_manifest(folder: Path) -> DemoManifest:
    """The manifest of the build in ``folder``; a ``UserError`` that says to rebuild when it was
    written by another version of Leakage Lab."""
    path = folder / MANIFEST
    stored = json.loads(path.read_text())
    if stored.get("version") != MANIFEST_VERSION:
        raise UserError(f"the demo under {folder} was built by another version of Leakage Lab "
                        f"(manifest version {stored.get('version')}, this one reads "
                        f"{MANIFEST_VERSION}): {REBUILD_HINT}")
    try:
        return from_jsonable(DemoManifest, stored | {"root": str(folder)})
    except (DaciteError, TypeError) as err:  # a field missing or of another shape
        raise UserError(f"the demo manifest in {folder} cannot be read ({err}): "
                        f"{REBUILD_HINT}") from None


def write_data(folder: Path, split: Split) -> None:
    """The training sets and the attacker's user samples as JSONL (one record per line)."""
    folder.mkdir(parents=True)
    samples = [{"user_id": u.user_id, "text": t, "member": u.member, "canary": bool(u.substring)}
               for u in split.users for t in u.attacker_samples]
    files = {"private_train": split.private_train, "user_samples": samples,
             "public_train": [{"text": t} for t in split.public_train],
             "validation": [{"text": t} for t in split.validation]}
    for name, records in files.items():
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as out:
            out.writelines(json.dumps(r) + "\n" for r in records)


def summary(manifest: DemoManifest) -> DemoSummary:
    """The manifest without the per-user samples."""
    def ids(users: Users) -> dict[str, list[str]]:
        return {"held_in": [u.user_id for u in users.held_in],
                "held_out": [u.user_id for u in users.held_out]}

    canary = manifest.canary_users
    return DemoSummary(
        root=manifest.root, config_hash=manifest.config_hash, seed=manifest.seed,
        corpus=manifest.corpus, plays=manifest.plays, models=manifest.models,
        tokens=manifest.tokens, canaries=manifest.canaries, secret=manifest.secret,
        files=manifest.files, checks=manifest.checks, build_seconds=manifest.build_seconds,
        users=UserIds(**ids(manifest.users)),
        canary_users=CanaryUserIds(**ids(canary), substrings={
            u.user_id: u.substring for u in canary.held_in + canary.held_out}),
    )
