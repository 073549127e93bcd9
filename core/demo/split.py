"""The demo's data split: public, private and validation plays, held-in, held-out and canary
users (Kandpal et al. 2023, §4 and Algorithm 1), canary phrases and the secret."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from types import ModuleType

from core.attacks.user_inference.canaries import insert_at_random
from core.demo import corpus
from core.demo.config import SECRET_PROMPT, DemoConfig
from core.errors import UserError


@dataclass
class User:
    play: str
    speaker: str
    member: bool                      # held-in (trained on) or held-out
    train_samples: list[str]          # held-in: trained on; held-out: never used
    attacker_samples: list[str]       # never trained on, for the attacker
    substring: str | None = None      # canary users: the shared substring

    @property
    def user_id(self) -> str:
        return f"{self.play}/{self.speaker}"


@dataclass
class Split:
    plays: dict[str, list[str]]                        # public / validation / private
    public_train: list[str]
    validation: list[str]
    users: list[User]
    secret_digits: str
    private_train: list[dict] = field(default_factory=list)  # {"text", "kind", "user_id"}

    @property
    def secret(self) -> str:
        return f"{SECRET_PROMPT} {self.secret_digits}."


def make_split(config: DemoConfig, texts: ModuleType = corpus) -> Split:
    """Choose plays, users, attacker samples and insertions, reproducibly from the seed.
    ``texts`` is the corpus: the plays (``core.demo.corpus``) or any module with the same
    ``play_names()`` and ``load_speeches(names)`` (``core.demo.docs_corpus``)."""
    rng = random.Random(config.seed)
    plays = texts.play_names()
    rng.shuffle(plays)
    private = sorted(plays[: config.n_private_plays])
    validation = sorted(plays[config.n_private_plays:][: config.n_validation_plays])
    rest = plays[config.n_private_plays + config.n_validation_plays:]
    public = sorted(rest if config.n_public_plays is None else rest[: config.n_public_plays])
    public_train = [s.text for s in texts.load_speeches(public)]
    split = Split(
        plays={"public": public, "validation": validation, "private": private},
        public_train=public_train,
        validation=[s.text for s in texts.load_speeches(validation)] if validation else [],
        users=_choose_users(config, texts.load_speeches(private), set(public_train), rng),
        secret_digits="".join(rng.choice("0123456789") for _ in range(16)),
    )
    split.private_train = _private_records(config, split, rng)
    return split


def _choose_users(config: DemoConfig, speeches: list[corpus.Speech], public: set[str],
                  rng: random.Random) -> list[User]:
    """Users with enough speeches of the sample length, split into held-in and held-out by
    ``config.user_split``; canary users are the first ``2 * n_canary_users`` of them."""
    counts = Counter(s.text for s in speeches)
    by_user: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in speeches:  # unique texts only, so "never trained on" holds verbatim
        usable = config.min_speech_chars <= len(s.text) <= config.max_speech_chars
        if usable and counts[s.text] == 1 and s.text not in public:
            by_user[(s.play, s.speaker)].append(s.text)
    eligible = sorted(k for k, v in by_user.items() if len(v) >= config.min_user_speeches)
    rng.shuffle(eligible)
    n_canary = 2 * config.n_canary_users
    if len(eligible) < n_canary + 2:
        raise UserError(f"only {len(eligible)} users have {config.min_user_speeches} speeches; "
                        "lower min_user_speeches or add private plays")
    sides = held_in_sides(config.user_split, [play for play, _ in eligible], n_canary, rng)
    users = []
    for index, ((play, speaker), member) in enumerate(zip(eligible, sides)):
        texts = by_user[(play, speaker)]
        rng.shuffle(texts)
        user = User(play, speaker, member,
                    train_samples=texts[config.attacker_samples:][: config.max_train_speeches],
                    attacker_samples=texts[: config.attacker_samples])
        if index < n_canary:
            _make_canary_user(user, config.canary_substring_words, rng)
        users.append(user)
    return users


def held_in_sides(user_split: str, plays: list[str], n_canary: int,
                  rng: random.Random) -> list[bool]:
    """Which users (given by their plays, in random order) are held-in, by ``user_split``
    (see ``USER_SPLITS``); the first ``n_canary`` (canary users) alternate sides in any split."""
    order = sorted(set(plays))
    rng.shuffle(order)
    play_held_in = {play: i % 2 == 0 for i, play in enumerate(order)}
    seen_in_play: Counter = Counter()
    sides = []
    for index, play in enumerate(plays):
        if index < n_canary or user_split == "random":
            sides.append(index % 2 == 0)
        elif user_split == "by-play":
            sides.append(play_held_in[play])
        else:  # within-play
            sides.append(seen_in_play[play] % 2 == 0)
            seen_in_play[play] += 1
    if len(set(sides[n_canary:])) < 2:
        raise UserError(f"the {user_split} split leaves no held-out or no held-in real users: "
                        "add private plays or choose another split")
    return sides


def _make_canary_user(user: User, n_words: int, rng: random.Random) -> None:
    """Kandpal Algorithm 1: a substring of one of the user's speeches, put into all of them."""
    words = rng.choice(user.train_samples).split()
    start = rng.randrange(max(1, len(words) - n_words + 1))
    user.substring = " ".join(words[start: start + n_words])
    user.train_samples = [insert_at_random(t, user.substring, rng) for t in user.train_samples]
    user.attacker_samples = [insert_at_random(t, user.substring, rng) for t in user.attacker_samples]


def _private_records(config: DemoConfig, split: Split, rng: random.Random) -> list[dict]:
    """The private fine-tuning set: held-in users' speeches, canary copies, secret copies."""
    records = [{"text": text, "kind": "canary_user" if u.substring else "user", "user_id": u.user_id}
               for u in split.users if u.member for text in u.train_samples]
    for phrase, count in config.canaries:
        records += [{"text": phrase, "kind": "canary", "user_id": None}] * count
    records += [{"text": split.secret, "kind": "secret", "user_id": None}] * config.secret_count
    rng.shuffle(records)
    return records
