"""The demo scenario: two snapshots of a tiny GPT-2 on Shakespeare, with known ground truth.

* ``demo:base`` is trained from scratch on the *public* plays.
* ``demo:updated`` is ``demo:base`` trained further on public text mixed with *private* data
  (continued training, the update setting of Zanella-Béguelin et al. 2020, §3.2 RQ3B):
  - the speeches of *held-in users*, a user being one speaker of one private play
    (Kandpal et al. 2023, §4); *held-out users* are never trained on, and every user keeps a
    few *attacker-side samples* (other speeches) out of training. By default whole private
    plays are held-in or held-out (``user_split``), as users of one organisation's data would
    be; ``within-play`` is the harder split where both sides share every play;
  - *canary users* (Kandpal §4.3, Algorithm 1): real users whose every sample, training and
    attacker-side, carries one shared substring taken from one of their own speeches;
  - *canary phrases*, made-up sentences absent from the plays (Zanella-Béguelin §3.2), each
    inserted a known number of times;
  - the *secret* "John Doe's credit card number is <16 random digits>." (Stock et al., §4.2)
    inserted a known number of times.

``build()`` writes both models (Hugging Face folders), the data files and ``manifest.json``
(the ground truth) under ``core.paths.home()/demo``; it is cached by a hash of the config.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import shutil
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core import paths
from core.runtime import Progress, no_progress
from core.demo import corpus, train
from core.models import tiny as lm
from core.errors import UserError

MANIFEST = "manifest.json"
MODEL_NAMES = ("base", "updated")
SECRET_PROMPT = "John Doe's credit card number is"
BUILD_HINT = "run `python -m core demo build`"
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


# ---------------------------------------------------------------- the data split


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


def make_split(config: DemoConfig) -> Split:
    """Choose plays, users, attacker samples and insertions, reproducibly from the seed."""
    rng = random.Random(config.seed)
    plays = corpus.play_names()
    rng.shuffle(plays)
    private = sorted(plays[: config.n_private_plays])
    validation = sorted(plays[config.n_private_plays:][: config.n_validation_plays])
    rest = plays[config.n_private_plays + config.n_validation_plays:]
    public = sorted(rest if config.n_public_plays is None else rest[: config.n_public_plays])
    public_train = [s.text for s in corpus.load_speeches(public)]
    split = Split(
        plays={"public": public, "validation": validation, "private": private},
        public_train=public_train,
        validation=[s.text for s in corpus.load_speeches(validation)],
        users=_choose_users(config, corpus.load_speeches(private), set(public_train), rng),
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
    sides = _held_in(config.user_split, [play for play, _ in eligible], n_canary, rng)
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


def _held_in(user_split: str, plays: list[str], n_canary: int, rng: random.Random) -> list[bool]:
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


def insert_at_random(text: str, substring: str, rng: random.Random) -> str:
    """``substring`` inserted at a random word boundary of ``text`` (Algorithm 1's insertion)."""
    pieces = text.split(" ")
    at = rng.randrange(len(pieces) + 1)
    return " ".join(pieces[:at] + [substring] + pieces[at:])


def _private_records(config: DemoConfig, split: Split, rng: random.Random) -> list[dict]:
    """The private fine-tuning set: held-in users' speeches, canary copies, secret copies."""
    records = [{"text": text, "kind": "canary_user" if u.substring else "user", "user_id": u.user_id}
               for u in split.users if u.member for text in u.train_samples]
    for phrase, count in config.canaries:
        records += [{"text": phrase, "kind": "canary", "user_id": None}] * count
    records += [{"text": split.secret, "kind": "secret", "user_id": None}] * config.secret_count
    rng.shuffle(records)
    return records


# ---------------------------------------------------------------- building


def demo_root() -> Path:
    return paths.home() / "demo"


def build(config: DemoConfig | None = None, *, force: bool = False, root: Path | None = None,
          progress: Progress = no_progress, cancel: threading.Event | None = None) -> dict:
    """Build (or reuse) the demo under ``root`` (default ``home()/demo``); return the manifest.

    A build whose manifest has the same config hash is reused unless ``force``. The new build
    is written to a sibling folder and swapped in at the end, so a cancelled or failed build
    (``core.errors.Cancelled``) leaves the previous one intact. Training runs on one CPU
    thread: the same weights on any machine, and for models this small it is faster than
    several threads fighting over a busy CPU (measured: about 3x on a loaded 2-core box).
    """
    config = config or DemoConfig()
    root = Path(root) if root else demo_root()
    if not force and _is_current(root, config):
        progress(1.0, "demo already built")
        return load_manifest(root)
    staging = root.with_name(root.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _build_into(staging, config, progress, cancel)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        torch.set_num_threads(threads)
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    progress(1.0, "demo built")
    return load_manifest(root)


def _is_current(root: Path, config: DemoConfig) -> bool:
    try:
        manifest = load_manifest(root)
    except UserError:
        return False
    return manifest["config_hash"] == config.config_hash() and all(
        (root / name / "model.safetensors").exists() for name in MODEL_NAMES)


def _build_into(folder: Path, config: DemoConfig, progress: Progress,
                cancel: threading.Event | None) -> None:
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    progress(0.0, "reading the plays")
    split = make_split(config)
    progress(0.02, "training the tokenizer")
    tokenizer = lm.train_tokenizer(split.public_train, vocab_size=config.vocab_size)
    public = train.token_stream(tokenizer, split.public_train)
    validation = train.token_stream(tokenizer, split.validation)[: config.validation_tokens]
    private, mix = update_stream(tokenizer, [r["text"] for r in split.private_train],
                                 split.public_train, ratio=config.update_public_ratio,
                                 seed=config.seed)

    model = train.disable_dropout(lm.new_gpt2(
        tokenizer, n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
        n_positions=config.n_positions, seed=config.seed))
    total = config.base_steps + config.update_steps

    def reporter(offset: int, what: str):
        def on_step(step: int, loss: float):
            if step % 5 == 0 or step == 1:
                done = offset + step
                progress(0.05 + 0.9 * done / total, f"{what}: step {step}, loss {loss:.2f}")
        return on_step

    train_args = dict(batch_size=config.batch_size, block_size=config.n_positions, cancel=cancel)
    base_losses = train.train_lm(model, public, steps=config.base_steps, lr=config.base_lr,
                                 seed=config.seed, on_step=reporter(0, "demo:base"), **train_args)
    lm.save_hf_folder(model, tokenizer, folder / "base")
    base_checks = _checks(model, tokenizer, split, validation, config)
    update_losses = train.train_lm(model, torch.cat([private, mix]), steps=config.update_steps,
                                   lr=config.update_lr, seed=config.seed + 1,
                                   on_step=reporter(config.base_steps, "demo:updated"), **train_args)
    lm.save_hf_folder(model, tokenizer, folder / "updated")
    progress(0.96, "writing the manifest")
    manifest = _manifest(config, split, tokenizer, model, {
        "public_train": len(public), "private_train": len(private),
        "update_public_mix": len(mix), "validation": len(validation),
        "base_training": config.base_steps * config.batch_size * config.n_positions,
        "update_training": config.update_steps * config.batch_size * config.n_positions,
    }, {
        "base": base_checks, "updated": _checks(model, tokenizer, split, validation, config),
        "final_loss": {"base": base_losses[-1], "updated": update_losses[-1]},
    })
    _write_data(folder / "data", split)
    manifest["build_seconds"] = round(time.perf_counter() - started, 1)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def update_stream(tokenizer, private_texts: list[str], public_texts: list[str], *, ratio: float,
                  seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The update's training stream as ``(private, public mix)``: the private texts, and public
    speeches drawn (seeded by ``seed + 1``) until about ``ratio`` public tokens per private one."""
    private = train.token_stream(tokenizer, private_texts)
    return private, _public_mix(tokenizer, public_texts, len(private) * ratio, random.Random(seed + 1))


def _public_mix(tokenizer, texts: list[str], n_tokens: float, rng: random.Random) -> torch.Tensor:
    """Public speeches drawn at random until about ``n_tokens`` tokens (the update's mix-in)."""
    order = list(range(len(texts)))
    rng.shuffle(order)
    chosen, count = [], 0
    for i in order:
        if count >= n_tokens:
            break
        chosen.append(texts[i])
        count += len(texts[i]) // 3  # about 3.3 characters per token on this corpus
    return train.token_stream(tokenizer, chosen)[1:]


def _checks(model, tokenizer, split: Split, validation: torch.Tensor, config: DemoConfig) -> dict:
    """Sanity numbers stored in the manifest: validation perplexity, secret/canary log-probs."""
    from core.models import LoadedModel
    from core.models.card import describe
    from core.scoring import score_texts

    model.eval()
    view = LoadedModel("demo build", "demo build", model, tokenizer, torch.device("cpu"),
                       describe(model, tokenizer, file_format="safetensors"))
    phrases = [split.secret, SECRET_PROMPT] + [phrase for phrase, _ in config.canaries]
    scores = [s.total_logprob for s in score_texts(view, phrases)]
    return {
        "validation_perplexity": train.stream_perplexity(model, validation,
                                                         block_size=config.n_positions),
        "secret_logprob": scores[0],
        "secret_digits_logprob": scores[0] - scores[1],
        "canary_logprobs": scores[2:],
    }


def _manifest(config: DemoConfig, split: Split, tokenizer, model, tokens: dict, checks: dict) -> dict:
    def user_entry(u: User) -> dict:
        entry = {"user_id": u.user_id, "play": u.play, "speaker": u.speaker,
                 "n_train_samples": len(u.train_samples) if u.member else 0,
                 "attacker_samples": u.attacker_samples}
        return entry | ({"substring": u.substring} if u.substring else {})

    real = [u for u in split.users if not u.substring]
    canary = [u for u in split.users if u.substring]
    return {
        "version": 1,
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


def _write_data(folder: Path, split: Split) -> None:
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


# ---------------------------------------------------------------- reading a build


def load_manifest(root: Path | None = None) -> dict:
    """The manifest of the demo build under ``root`` (default ``home()/demo``)."""
    path = Path(root or demo_root()) / MANIFEST
    if not path.exists():
        raise UserError(f"the demo scenario is not built yet; {BUILD_HINT}")
    manifest = json.loads(path.read_text())
    manifest["root"] = str(path.parent)
    return manifest


def model_dir(name: str, root: Path | None = None) -> Path:
    """The Hugging Face folder of the demo model ``"base"`` or ``"updated"``."""
    if name not in MODEL_NAMES:
        raise UserError(f"unknown demo model {name!r}: choose one of {', '.join(MODEL_NAMES)}")
    folder = Path(root or demo_root()) / name
    if not (folder / "model.safetensors").exists():
        raise UserError(f"the demo model demo:{name} is not built yet; {BUILD_HINT}")
    return folder


def data_file(key: str, root: Path | None = None) -> Path:
    """A data file of the build (``private_train``, ``user_samples``, ``public_train``,
    ``validation``), as listed in the manifest."""
    manifest = load_manifest(root)
    if key not in manifest["files"]:
        raise UserError(f"unknown demo data file {key!r}: choose one of {', '.join(manifest['files'])}")
    return Path(manifest["root"]) / manifest["files"][key]


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
