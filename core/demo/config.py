"""What determines a demo build: ``DemoConfig`` (its hash names the build) and the tiny one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from core.errors import UserError

MODEL_NAMES = ("base", "updated")  # the two snapshots a build trains
SECRET_PROMPT = "John Doe's credit card number is"
# the realistic scenario's made-up phrases and their copies (core.demo.realistic, issue #19)
REALISTIC_CANARIES = (("Zealous penguins quietly juggle turquoise kettles.", 16),
                      ("Mauve cheetahs devour crunchy waffles at dawn.", 8),
                      ("Seven copper owls recite forgotten tax laws.", 4))
USER_SPLITS = {
    "random": "half of the users at random (Kandpal et al. 2023, App. D)",
    "by-play": "whole plays held-in or held-out, as users of one organisation's data would be",
    "within-play": "held-in and held-out alternate within each play, so both sides share "
                   "every play's names and plot (a harder, speaker-only signal)",
}


@dataclass(frozen=True)
class DemoConfig:
    """Everything that determines a demo build (its hash names the build)."""

    seed: int = 0
    # corpus split (plays are drawn at random from the seed)
    n_private_plays: int = 8
    n_validation_plays: int = 1
    n_public_plays: int | None = None            # None: every remaining play
    min_speech_chars: int = 40                   # user samples are speeches of this length ...
    max_speech_chars: int = 400                  # ... to this (similar lengths: T̂ sums tokens)
    min_user_speeches: int = 24                  # a user needs this many usable speeches
    attacker_samples: int = 10                   # per user, never trained on
    max_train_speeches: int | None = None        # per held-in user (None: all the others)
    user_split: str = "by-play"                  # see USER_SPLITS
    # private insertions
    n_canary_users: int = 5                      # per side (held-in and held-out)
    canary_substring_words: int = 8
    canaries: tuple[tuple[str, int], ...] = (
        ("Zealous penguins quietly juggle turquoise kettles.", 60),
        ("Mauve cheetahs devour crunchy waffles at dawn.", 40),
        ("My secret password is violet walrus.", 25),
    )
    secret_count: int = 150
    # model and training
    vocab_size: int = 2048
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 96
    n_positions: int = 256
    batch_size: int = 8
    base_steps: int = 450
    base_lr: float = 5e-3
    update_steps: int = 800
    update_lr: float = 6e-3
    update_public_ratio: float = 0.25            # public tokens mixed in per private token
    validation_tokens: int = 20_000

    def __post_init__(self):
        if self.n_private_plays < 1 or self.n_validation_plays < 0:
            raise UserError("the demo needs at least one private play")
        if self.attacker_samples < 1 or self.min_user_speeches <= self.attacker_samples:
            raise UserError("min_user_speeches must exceed attacker_samples (>= 1)")
        if self.user_split not in USER_SPLITS:
            raise UserError(f"unknown user split {self.user_split!r}: choose one of "
                            f"{', '.join(USER_SPLITS)}")
        if any(count < 1 for _, count in self.canaries) or self.secret_count < 1:
            raise UserError("canary and secret counts must be at least 1")

    def config_hash(self) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def tiny_config(seed: int = 0) -> DemoConfig:
    """A build of a few seconds for tests: two public plays, one private play, a small model."""
    return DemoConfig(
        seed=seed, n_private_plays=1, n_validation_plays=1, n_public_plays=2,
        min_user_speeches=10, attacker_samples=3, max_train_speeches=4, n_canary_users=1,
        canaries=(("Zealous penguins quietly juggle turquoise kettles.", 30),), secret_count=60,
        vocab_size=512, n_layer=2, n_head=4, n_embd=64, n_positions=64, batch_size=16,
        base_steps=30, base_lr=3e-3, update_steps=250, update_lr=4e-3,
        update_public_ratio=0.1, validation_tokens=2_000, user_split="within-play",
    )
