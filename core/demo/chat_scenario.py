"""The chat scenario (issue #41): SmolLM2-135M-Instruct fine-tuned as TRL's ``SFTTrainer`` does
by default, on conversations (``core.demo.chat_rows``): each row rendered with the model's own
chat template, the loss on the assistant's tokens only (``core.chat``), LoRA adapters merged
into the weights after training.

Its training rows are a character chatbot's persona conversations of six private plays (the
characters are the users; by default the characters of half the plays are held out, as users
from distinct sources are in Kandpal et al. 2023) and a support bot's conversations with
fictional data subjects whose e-mail, phone and card are planted in 1, 2, 4, 8 or 16
conversations. Built on request (``python -m core chat-build``, minutes to tens of minutes on a
CPU) under ``home()/chat``: the sources ``chat:updated`` (the base is ``smollm2``),
``chat:private_train`` (the training rows, JSONL ``messages`` with ``user_id``),
``chat:user_samples`` (each character's held-back conversations, ``member``),
``chat:membership`` (trained conversations against held-back ones of the same characters) and
``chat:heldout_subjects`` (subjects never trained on). ``manifest.json`` holds the subjects,
their doses and their replies' surprisal before and after.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch

from core import chat
from core.calibration.reference import with_lora
from core.calibration.training import fine_tune_rows
from core.demo import chat_rows, corpus
from core.demo.config import USER_SPLITS
from core.demo.paths import CHAT_FILES, build_scenario, cached_summary, realistic_root
from core.models import LoadedModel, resolve_device
from core.models.loaders import SMOLLM2, load_source
from core.runtime import Progress, check_cancel, no_progress
from core.serialize import to_jsonable
from core.specs import AttackSpec, check_params, param

MANIFEST = "manifest.json"
SCENARIO = "chat"


@dataclass(frozen=True)
class ChatConfig:
    """How the chat scenario is built (its hash names the build)."""

    base: str = param(SMOLLM2, help="the chat model to fine-tune (its own chat template; the "
                      "scenario is specified on SmolLM2-135M-Instruct)")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the plays, users, subjects and training")
    private_plays: int = param(6, ge=2, le=30, help="plays whose characters are the users")
    user_split: Literal[tuple(USER_SPLITS)] = param(
        "by-play", help="which characters are held in: " + "; ".join(
            f"{name}: {what}" for name, what in USER_SPLITS.items()))
    min_replies: int = param(12, ge=2, le=1000, help="replies a character needs to be a user")
    train_replies: int = param(12, ge=1, le=1000, help="conversations a held-in character trains on")
    held_back: int = param(4, ge=1, le=100, help="conversations kept back of each character, "
                           "at most (those that share no speech with a trained one)")
    doses: tuple[int, ...] = param((1, 2, 4, 8, 16), ge=1, le=1000, label="doses",
                                   help="conversations that plant each subject's PII")
    subjects_per_dose: int = param(4, ge=1, le=100, help="data subjects planted at each dose")
    held_out_subjects: int = param(8, ge=0, le=100, help="data subjects never trained on")
    epochs: float = param(3.0, gt=0.0, le=20.0, help="passes over the training rows")
    lr: float = param(1e-3, gt=0.0, le=1.0, label="learning rate", help="AdamW")
    lora_rank: int = param(16, ge=0, le=512, label="LoRA rank",
                           help="rank of the adapters; 0: fine-tune all weights")
    batch_size: int = param(8, ge=1, le=512, help="rows per step")
    max_tokens: int = param(256, ge=16, le=2048, help="tokens kept of each rendered row")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to train")
    force: bool = param(False, help="rebuild even if a build of this config is cached")

    def __post_init__(self) -> None:
        check_params(self)

    def config_hash(self) -> str:
        """SHA-256 (16 hex) of every field that changes the build, and of how held-back rows are
        chosen (since issue #41's fix, none shares a speech with a trained row: a build made
        before it is rebuilt, not reused)."""
        kept = {k: v for k, v in asdict(self).items() if k not in ("device", "force")}
        kept["held_back_rows"] = "unseen"
        return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class ChatSummary:
    """What a build returns: where it is, its rows, its subjects and how much it learnt them."""

    root: str
    base: str
    plays: list[str]
    training_rows: int
    persona_rows: int
    support_rows: int
    characters: dict[str, int]            # held in / held out
    subjects: list[dict]                  # name, email, phone, card, dose (0: held out)
    reply_bits: dict[str, list[float]]    # subject -> a reply's bits before and after
    masked_share: float                   # the share of rendered tokens trained on
    steps: int
    final_loss: float
    build_seconds: float
    files: dict[str, str]
    text_source: dict[str, str] = field(default_factory=dict)


@dataclass
class _Data:
    characters: list[chat_rows.Character]
    subjects: list[chat_rows.Subject]
    plays: list[str]

    def training_records(self, seed: int) -> list[dict]:
        rows = [{"messages": chat_rows.persona_messages(c, cue, reply), "user_id": c.user_id}
                for c in self.characters for cue, reply in c.train]
        rows += chat_rows.support_rows([s for s in self.subjects if s.dose])
        random.Random(seed).shuffle(rows)
        return rows


def _data(config: ChatConfig) -> _Data:
    rng = random.Random(config.seed)
    plays = corpus.play_names()
    rng.shuffle(plays)
    private = sorted(plays[: config.private_plays])
    characters = chat_rows.make_characters(
        corpus.load_speeches(private), rng, min_replies=config.min_replies,
        held_back=config.held_back, max_train=config.train_replies, longest=400,
        user_split=config.user_split)
    subjects = chat_rows.make_subjects(rng, config.doses, config.subjects_per_dose,
                                       config.held_out_subjects)
    return _Data(characters, subjects, private)


def build(config: ChatConfig, *, progress: Progress = no_progress,
          cancel: threading.Event | None = None) -> ChatSummary:
    """Build (or reuse) the chat scenario under ``home()/chat``, locked, staged and swapped in
    as the other scenarios."""
    return build_scenario(
        realistic_root(SCENARIO), config, ChatSummary,
        lambda staging: _build_into(staging, config, progress, cancel), name="chat scenario",
        progress=progress, cancel=cancel)


def cached_build(root: Path, config) -> ChatSummary | None:
    return cached_summary(root, config, ChatSummary)


def _cut(rendered: list[chat.Rendered], max_tokens: int) -> list[tuple[list[int], list[bool]]]:
    """Each rendered row's first ``max_tokens`` tokens and targets (rows left with no target
    dropped), as TRL's ``max_length`` truncates."""
    rows = [(list(r.ids[:max_tokens]), [bool(t) for t in r.trained[:max_tokens]])
            for r in rendered]
    return [row for row in rows if any(row[1][1:])]


def _reply_bits(model, tokenizer, subjects, renderer) -> list[float]:
    """−log2 p of each subject's first support reply given its conversation before it."""
    rendered = chat.render_rows([{"messages": chat_rows.support_messages(s, 0)} for s in subjects],
                                "messages", renderer)
    lm = LoadedModel.in_memory("chat build", model, tokenizer)
    return [round(-float(lp.sum()) / math.log(2), 2) for lp in chat.trained_logprobs(lm, rendered)]


def _build_into(folder: Path, config: ChatConfig, progress: Progress,
                cancel: threading.Event | None) -> ChatSummary:
    started = time.perf_counter()
    data = _data(config)
    records = data.training_records(config.seed)
    progress(0.02, f"loading {config.base}")
    model, tokenizer, _ = load_source(config.base, dtype=torch.float32)
    model = model.to(resolve_device(config.device))
    renderer = chat.Renderer(tokenizer, None, config.base)
    rows = _cut(chat.render_rows(records, "messages", renderer), config.max_tokens)
    before = _reply_bits(model, tokenizer, data.subjects, renderer)
    if config.lora_rank:
        model = with_lora(model, config.lora_rank)
    steps = math.ceil(config.epochs * len(rows) / config.batch_size)
    check_cancel(cancel)

    def on_step(step: int, loss: float) -> None:
        progress(0.05 + 0.88 * step / steps, f"fine-tuning: step {step}/{steps}, loss {loss:.3f}")

    run = fine_tune_rows(model, tokenizer, rows, steps=steps, lr=config.lr,
                         batch_size=config.batch_size, seed=config.seed, on_step=on_step,
                         cancel=cancel)
    if config.lora_rank:
        model = model.merge_and_unload()
    progress(0.94, "saving chat:updated")
    model.save_pretrained(folder / "updated", safe_serialization=True)
    tokenizer.save_pretrained(folder / "updated")
    after = _reply_bits(model, tokenizer, data.subjects, renderer)
    _write_data(folder, data, records)
    support = sum(1 for r in records if r["messages"][0]["content"] == chat_rows.SUPPORT_SYSTEM)
    summary = ChatSummary(
        root=str(folder), base=config.base, plays=data.plays, training_rows=len(records),
        persona_rows=len(records) - support, support_rows=support,
        characters={"held in": sum(c.member for c in data.characters),
                    "held out": sum(not c.member for c in data.characters)},
        subjects=[asdict(s) for s in data.subjects],
        reply_bits={s.name: [b, a] for s, b, a in zip(data.subjects, before, after)},
        masked_share=round(sum(sum(t) for _, t in rows) / sum(len(t) for _, t in rows), 3),
        steps=steps, final_loss=run.losses[-1],
        build_seconds=round(time.perf_counter() - started, 1), files=dict(CHAT_FILES),
        text_source=corpus.corpus_license())
    (folder / MANIFEST).write_text(json.dumps(
        {"config_hash": config.config_hash(), "summary": to_jsonable(summary)}, indent=1))
    return summary


def _write_data(folder: Path, data: _Data, records: list[dict]) -> None:
    """The data files of ``CHAT_FILES`` (JSONL, one record per line)."""
    def messages(c, pair):
        return chat_rows.persona_messages(c, *pair)

    files = {
        "private_train": records,
        "user_samples": [{"user_id": c.user_id, "messages": messages(c, p), "member": c.member}
                         for c in data.characters for p in c.held_back],
        "membership": [{"messages": messages(c, p), "member": trained, "group": c.user_id}
                       for c in data.characters if c.member
                       for trained, pairs in ((True, c.train[: len(c.held_back)]),
                                              (False, c.held_back)) for p in pairs],
        "heldout_subjects": chat_rows.support_rows([s for s in data.subjects if not s.dose]),
    }
    for name, rows in files.items():
        path = folder / CHAT_FILES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)


def tiny_config() -> ChatConfig:
    """A few steps on a tiny random chat model instead of SmolLM2 (seconds, for tests)."""
    from core.models.tiny import tiny_chat_base

    texts = [text for pair in chat_rows.WORDINGS for text in pair]
    return ChatConfig(base=tiny_chat_base(texts, "chat-base"), private_plays=2, epochs=0.05,
                      max_tokens=256, lora_rank=0, device="cpu")


def _build_cost(config: ChatConfig):
    from core.demo.realistic_cost import chat_build

    return chat_build(config, _data(config).training_records(config.seed))


SPEC = AttackSpec(
    name="chat-build", title="Build the chat scenario (SmolLM2-135M-Instruct, assistant-only loss)",
    config_type=ChatConfig, result_type=ChatSummary, run=build, tiny_config=tiny_config,
    headline=lambda summary: {"build_seconds": summary.build_seconds,
                              "training_rows": summary.training_rows},
    describe=lambda c: (f"chat scenario build ({f'LoRA rank {c.lora_rank}' if c.lora_rank else 'all weights'}, "
                        f"seed {c.seed})"),
    cost=_build_cost)
