"""The demo build's ground truth: ``manifest.json`` (versioned), its data files and a summary."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from core.demo import corpus
from core.demo.config import SECRET_PROMPT, DemoConfig
from core.demo.paths import MANIFEST_VERSION, MODEL_NAMES
from core.demo.split import Split, User


def make_manifest(config: DemoConfig, split: Split, tokenizer, model, tokens: dict, checks: dict) -> dict:
    def user_entry(u: User) -> dict:
        entry = {"user_id": u.user_id, "play": u.play, "speaker": u.speaker,
                 "n_train_samples": len(u.train_samples) if u.member else 0,
                 "attacker_samples": u.attacker_samples}
        return entry | ({"substring": u.substring} if u.substring else {})

    real = [u for u in split.users if not u.substring]
    canary = [u for u in split.users if u.substring]
    return {
        "version": MANIFEST_VERSION,
        "config_hash": config.config_hash(),
        "config": dataclasses.asdict(config),
        "seed": config.seed,
        "corpus": corpus.corpus_license(),
        "plays": split.plays,
        "models": {name: {"folder": name, "parameters": model.num_parameters(),
                          "vocab_size": len(tokenizer), "context": config.n_positions}
                   for name in MODEL_NAMES},
        "tokens": tokens,
        "users": {"held_in": [user_entry(u) for u in real if u.member],
                  "held_out": [user_entry(u) for u in real if not u.member]},
        "canary_users": {"substring_words": config.canary_substring_words,
                         "held_in": [user_entry(u) for u in canary if u.member],
                         "held_out": [user_entry(u) for u in canary if not u.member]},
        "canaries": [{"phrase": phrase, "count": count} for phrase, count in config.canaries],
        "secret": {"sentence": split.secret, "prompt": SECRET_PROMPT,
                   "digits": split.secret_digits, "count": config.secret_count},
        "files": {"private_train": "data/private_train.jsonl",
                  "user_samples": "data/user_samples.jsonl",
                  "public_train": "data/public_train.jsonl",
                  "validation": "data/validation.jsonl"},
        "checks": checks,
    }


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


def summary(manifest: dict) -> dict:
    """The manifest without the per-user samples (what ``demo show`` prints)."""
    def users(group: dict) -> dict:
        return {side: [u["user_id"] for u in group[side]] for side in ("held_in", "held_out")}

    keep = ("root", "config_hash", "seed", "corpus", "plays", "models", "tokens", "canaries",
            "secret", "files", "checks", "build_seconds")
    return {k: manifest[k] for k in keep if k in manifest} | {
        "users": users(manifest["users"]),
        "canary_users": users(manifest["canary_users"]) | {
            "substrings": {u["user_id"]: u["substring"] for side in ("held_in", "held_out")
                           for u in manifest["canary_users"][side]}},
    }
