"""The realistic scenario (issue #19): a real pretrained LM fine-tuned on private text.

The tiny demo's update adds a little private text to a model that already knows the domain, as
in the differential-rank paper. A real audit meets a *domain shift*: here SmolLM2-135M (the
``smollm2`` source, pretrained on web text) is fine-tuned with LoRA, for one epoch, on the
private plays' held-in users with the demo's kinds of plants (``core.demo.split``): the secret
"John Doe's credit card number is <16 digits>.", three made-up canary phrases planted 16, 8 and
4 times, and canary users (Kandpal et al. 2023, Algorithm 1). Everything Shakespearean rises
under the fine-tune, and the plants drown in it unless the attack is domain-calibrated: the
build also writes a public in-domain sample (speeches of the public plays, never trained on).

The *technical* scenario (issue #32) checks that what holds there is not one domain's and one
fine-tuning style's: all of SmolLM2's weights are fine-tuned, for two epochs, on Python's
reference documentation (``core.demo.docs_corpus``; topics as users) with the same plants.

The *shift* scenario (issue #45) stresses calibration and discovery: all of SmolLM2's weights
are fine-tuned for a full epoch on the plays, a domain it does not know (the build records the
held-out loss before and after), and each plant is a line inside a trained speech, never its
start, where the paper's beam starts (docs/realistic-scenario.md: it finds them all the same).

Built on request, never by default (tens of minutes on a CPU): ``python -m core realistic-build``
or ``technical-build``. The models and files are then the sources ``realistic:updated`` (the
base is ``smollm2``) and ``realistic:private_train``, ``realistic:user_samples``,
``realistic:test`` (held-out users' texts) and ``realistic:public_sample`` (``technical:`` for
the second); ``manifest.json`` holds the ground truth and the plants' surprisal (bits) before
and after the fine-tune.
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
from typing import ClassVar, Literal

import torch

from core.calibration.reference import with_lora
from core.calibration.training import fine_tune
from core.demo import corpus, docs_corpus
from core.demo.config import REALISTIC_CANARIES, SECRET_PROMPT, DemoConfig
from core.demo.paths import REALISTIC_FILES, build_scenario, cached_summary, realistic_root
from core.demo.split import Split, make_split
from core.errors import UserError
from core.models import LoadedModel, resolve_device
from core.models.loaders import SMOLLM2, load_source
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import score_texts
from core.serialize import to_jsonable
from core.specs import AttackSpec, check_params, param

MANIFEST = "manifest.json"
HOST_CHARS = 240   # a host speech's length at most: with its plant, within 128 tokens
INSIDE_HELP = ("plant each copy as a line inside a trained speech (never its first), not as a "
               "text of its own")


# corpus -> (the texts, the split's user settings)
CORPORA = {
    "plays": (corpus, {"min_user_speeches": 16, "attacker_samples": 6}),
    "python-docs": (docs_corpus,
                    {"min_user_speeches": 12, "attacker_samples": 4, "max_train_speeches": 60}),
}
CORPUS_HELP = ("the private text: Shakespeare's plays (speakers as users) or Python's reference "
               "documentation (topics as users)")


@dataclass(frozen=True)
class RealisticConfig:
    """How a realistic scenario is built (its hash names the build)."""

    SCENARIO: ClassVar[str] = "realistic"   # its folder and sources' prefix, whatever the corpus
    corpus: Literal["plays", "python-docs"] = param("plays", help=CORPUS_HELP)
    base: str = param(SMOLLM2, help="the pretrained model to fine-tune (any causal LM source; "
                      "the scenario is specified on SmolLM2-135M)")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the split, the plants and training")
    private_plays: int = param(3, ge=1, le=60, label="private plays (topics)",
                               help="plays (or documentation topics) whose users are private")
    secret_count: int = param(20, ge=1, le=1000, help="copies of the secret in the training set")
    public_sample: int = param(400, ge=10, le=20_000, label="public sample (texts)",
                               help="public speeches written as the in-domain sample")
    epochs: float = param(1.0, gt=0.0, le=20.0, help="passes over the private training set")
    lr: float = param(3e-4, gt=0.0, le=1.0, label="learning rate", help="AdamW")
    lora_rank: int = param(16, ge=0, le=512, label="LoRA rank",
                           help="rank of the adapters; 0: fine-tune all weights")
    batch_size: int = param(8, ge=1, le=512, help="texts per step")
    max_tokens: int = param(128, ge=8, le=2048, help="tokens kept of each text")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to train")
    inside_speeches: bool = param(False, help=INSIDE_HELP)
    force: bool = param(False, help="rebuild even if a build of this config is cached")

    def __post_init__(self) -> None:
        check_params(self)

    @property
    def scenario(self) -> str:
        """``realistic`` or ``technical``: the build's folder and its sources' prefix, owned by
        the build (issue #42, B4: ``technical-build --corpus plays`` wrote into ``realistic``)."""
        return self.SCENARIO

    def split_config(self) -> DemoConfig:
        """The demo's split with this scenario's plants: fewer, as a real fine-tune would see."""
        return DemoConfig(seed=self.seed, n_private_plays=self.private_plays,
                          n_validation_plays=0, n_canary_users=2, canaries=REALISTIC_CANARIES,
                          secret_count=self.secret_count, **CORPORA[self.corpus][1])

    def config_hash(self) -> str:
        """SHA-256 (16 hex) of every field that changes the build (the plays' hash leaves out
        ``corpus``, and every build ``inside_speeches`` when off: both were added later, and
        earlier builds stay cached)."""
        kept = {k: v for k, v in asdict(self).items() if k not in ("device", "force")}
        if kept["corpus"] == "plays":
            del kept["corpus"]
        if not kept["inside_speeches"]:
            del kept["inside_speeches"]
        return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TechnicalConfig(RealisticConfig):
    """The technical scenario: Python's reference documentation, all weights fine-tuned for
    several epochs (issue #32: a second domain and a second fine-tuning style)."""

    SCENARIO: ClassVar[str] = "technical"
    corpus: Literal["plays", "python-docs"] = param("python-docs", help=CORPUS_HELP)
    private_plays: int = param(50, ge=1, le=60, label="private topics",
                               help="documentation topics drawn as private (topics with 12 "
                                    "paragraphs or more become users)")
    secret_count: int = param(8, ge=1, le=1000, help="copies of the secret in the training set")
    epochs: float = param(2.0, gt=0.0, le=20.0, help="passes over the private training set")
    lr: float = param(3e-5, gt=0.0, le=1.0, label="learning rate", help="AdamW")
    lora_rank: int = param(0, ge=0, le=512, label="LoRA rank",
                           help="rank of the adapters; 0: fine-tune all weights")


@dataclass(frozen=True)
class ShiftConfig(RealisticConfig):
    """The shift scenario: the plays, which SmolLM2 does not know, all weights for a full epoch,
    the plants inside speeches (issue #45: a domain shift that calibration and the beam must
    survive)."""

    SCENARIO: ClassVar[str] = "shift"
    private_plays: int = param(20, ge=1, le=60, label="private plays (topics)",
                               help="plays (or documentation topics) whose users are private")
    secret_count: int = param(20, ge=1, le=1000, help="copies of the secret in the training set")
    lora_rank: int = param(0, ge=0, le=512, label="LoRA rank",
                           help="rank of the adapters; 0: fine-tune all weights")
    inside_speeches: bool = param(True, help=INSIDE_HELP)


@dataclass
class RealisticSummary:
    """What a build returns: where it is, the plants and how much the fine-tune learnt them."""

    root: str
    base: str
    plays: dict[str, list[str]]
    training_texts: int
    secret: str
    canaries: list[tuple[str, int]]
    canary_users: dict[str, str]          # user id -> shared substring
    surprisal_bits: dict[str, list[float]]  # plant -> [before, after] the fine-tune
    steps: int
    final_loss: float
    build_seconds: float
    files: dict[str, str]
    text_source: dict[str, str] = field(default_factory=dict)   # package, version, license
    # mean loss (nats/token), [base, fine-tune], of texts never trained on (``loss_texts``):
    heldout_loss: list[float] = field(default_factory=list)   # held-in users' other speeches
    public_loss: list[float] = field(default_factory=list)    # the public sample (other plays)


def build(config: RealisticConfig, *, progress: Progress = no_progress,
          cancel: threading.Event | None = None) -> RealisticSummary:
    """Build (or reuse) the realistic scenario under ``home()/realistic``; same locking,
    staging and swap as the demo build (``core.demo.paths``)."""
    return build_scenario(
        realistic_root(config.scenario), config, RealisticSummary,
        lambda staging: _build_into(staging, config, progress, cancel), name=f"{config.scenario} scenario",
        progress=progress, cancel=cancel)


def cached_build(root: Path, config) -> RealisticSummary | None:
    return cached_summary(root, config, RealisticSummary)


def _build_into(folder: Path, config: RealisticConfig, progress: Progress,
                cancel: threading.Event | None) -> RealisticSummary:
    started = time.perf_counter()
    progress(0.0, f"reading the {config.corpus}")
    split = scenario_split(config)
    texts = [record["text"] for record in split.private_train]
    public = public_texts(split, config)
    heldout = loss_texts(split, public)
    progress(0.02, f"loading {config.base}")
    model, tokenizer, _ = load_source(config.base, dtype=torch.float32)
    model = model.to(resolve_device(config.device))
    plants = [split.secret] + [phrase for phrase, _ in REALISTIC_CANARIES]
    before = _surprisal_bits(model, tokenizer, plants)
    losses = {name: [_mean_loss(model, tokenizer, kept)] for name, kept in heldout.items()}
    if config.lora_rank:
        model = with_lora(model, config.lora_rank)
    steps = math.ceil(config.epochs * len(texts) / config.batch_size)
    check_cancel(cancel)

    def on_step(step: int, loss: float) -> None:
        progress(0.05 + 0.88 * step / steps, f"fine-tuning: step {step}/{steps}, loss {loss:.3f}")

    run = fine_tune(model, tokenizer, texts, steps=steps, lr=config.lr,
                    batch_size=config.batch_size, max_tokens=config.max_tokens, seed=config.seed,
                    on_step=on_step, cancel=cancel)
    if config.lora_rank:
        model = model.merge_and_unload()
    progress(0.94, f"saving {config.scenario}:updated")
    model.save_pretrained(folder / "updated", safe_serialization=True)
    tokenizer.save_pretrained(folder / "updated")
    after = _surprisal_bits(model, tokenizer, plants)
    for name, kept in heldout.items():
        losses[name].append(_mean_loss(model, tokenizer, kept))
    _write_data(folder, split, public)
    summary = RealisticSummary(
        root=str(folder), base=config.base, plays=split.plays, training_texts=len(texts),
        secret=split.secret, canaries=list(REALISTIC_CANARIES),
        canary_users={u.user_id: u.substring for u in split.users if u.substring},
        surprisal_bits={text: [b, a] for text, b, a in zip(plants, before, after)},
        steps=steps, final_loss=run.losses[-1],
        build_seconds=round(time.perf_counter() - started, 1), files=dict(REALISTIC_FILES),
        text_source=CORPORA[config.corpus][0].corpus_license(),
        heldout_loss=losses["heldout"], public_loss=losses["public"])
    (folder / MANIFEST).write_text(json.dumps(
        {"config_hash": config.config_hash(), "summary": to_jsonable(summary)}, indent=1))
    return summary


def _surprisal_bits(model, tokenizer, texts: list[str]) -> list[float]:
    """−log2 p(text) of each text under ``model`` (the scoring engine, after its context token);
    the secret's digits are what matter, so its prompt's surprisal is subtracted."""
    scores = score_texts(LoadedModel.in_memory("realistic build", model, tokenizer),
                         [SECRET_PROMPT, *texts])
    prompt, *rest = (-s.total_logprob / math.log(2) for s in scores)
    return [round(bits - (prompt if i == 0 else 0.0), 2) for i, bits in enumerate(rest)]


def scenario_split(config: RealisticConfig) -> Split:
    """The build's split (``core.demo.split``), its plants inside speeches when the config says
    so."""
    split = make_split(config.split_config(), CORPORA[config.corpus][0])
    if config.inside_speeches:
        split.private_train = plants_inside_speeches(split.private_train,
                                                     random.Random(config.seed))
    return split


def _mean_loss(model, tokenizer, texts: list[str]) -> float:
    """Mean negative log-likelihood (nats/token) of ``texts``: the domain's held-out loss."""
    scores = score_texts(LoadedModel.in_memory("realistic build", model, tokenizer), texts)
    return round(-sum(s.total_logprob for s in scores) / sum(s.n_scored for s in scores), 3)


def plants_inside_speeches(records: list[dict], rng: random.Random) -> list[dict]:
    """The plant records (secret and phrases) each put into a distinct held-in user's speech as
    a line of its own after one of its lines (or after the speech's one line), so that no plant
    starts a text; the host speech keeps its user, the record the plant's kind. Hosts are short
    speeches (``HOST_CHARS``), so that the plant fits in the tokens a text keeps."""
    plants = [r for r in records if r["kind"] in ("secret", "canary")]
    hosts = [i for i, r in enumerate(records) if r["kind"] == "user"
             and len(r["text"]) <= HOST_CHARS]
    if len(hosts) < len(plants):
        raise UserError(f"{len(plants)} plants need as many held-in speeches; {len(hosts)} found")
    out = [r for r in records if r["kind"] not in ("secret", "canary")]
    positions = {id(r): i for i, r in enumerate(out)}
    for plant, host in zip(plants, rng.sample(hosts, len(plants))):
        lines = records[host]["text"].split("\n")
        at = rng.randrange(1, len(lines) + 1)
        text = "\n".join(lines[:at] + [plant["text"]] + lines[at:])
        out[positions[id(records[host])]] = {**records[host], "text": text, "kind": plant["kind"]}
    return out


def loss_texts(split: Split, public: list[str]) -> dict[str, list[str]]:
    """The texts whose loss measures how much of the domain the fine-tune learnt: the held-in
    users' speeches kept for the attacker (the fine-tune's own held-out set: its plays, never
    trained on; canary users' left out) and the public sample (the domain's other plays)."""
    return {"heldout": [t for u in split.users if u.member and not u.substring
                        for t in u.attacker_samples], "public": public}


def public_texts(split: Split, config: RealisticConfig) -> list[str]:
    """The public in-domain sample: speeches of the public plays, never trained on."""
    public = [t for t in split.public_train if 40 <= len(t) <= 400]
    return random.Random(config.seed).sample(public, min(len(public), config.public_sample))


def _write_data(folder: Path, split: Split, public: list[str]) -> None:
    """The four data files (JSONL, one record per line) named in ``REALISTIC_FILES``."""
    records = {
        "private_train": split.private_train,
        "user_samples": [{"user_id": u.user_id, "text": t, "member": u.member,
                          "canary": bool(u.substring)}
                         for u in split.users for t in u.attacker_samples],
        "test": [{"text": t, "user_id": u.user_id} for u in split.users if not u.member
                 for t in u.train_samples],
        "public_sample": [{"text": t} for t in public],
    }
    for name, rows in records.items():
        path = folder / REALISTIC_FILES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)


def tiny_config(config_type: type[RealisticConfig] = RealisticConfig) -> RealisticConfig:
    """A few steps on a one-layer random GPT-2 instead of SmolLM2 (seconds, for tests)."""
    from core.models.tiny import tiny_random_models

    base = tiny_random_models([SECRET_PROMPT, *(p for p, _ in REALISTIC_CANARIES)],
                              ["realistic-base"])[0]
    return config_type(base=base, epochs=0.02, max_tokens=16, public_sample=20, device="cpu")


def _spec(name: str, config_type: type[RealisticConfig], style: str) -> AttackSpec:
    return AttackSpec(
        name=name, title=f"Build the {name.removesuffix('-build')} scenario (SmolLM2-135M, "
                         f"{style})",
        config_type=config_type, result_type=RealisticSummary, run=build,
        tiny_config=lambda: tiny_config(config_type),
        headline=lambda summary: {"build_seconds": summary.build_seconds,
                                  "training_texts": summary.training_texts},
        describe=lambda c: f"{c.scenario} scenario build ({c.corpus}, "
                           f"{f'LoRA rank {c.lora_rank}' if c.lora_rank else 'all weights'}, "
                           f"seed {c.seed})",
        cost=_build_cost)


def _build_cost(config: RealisticConfig):
    from core.demo.realistic_cost import scenario_build

    return scenario_build(config)


SPEC = _spec("realistic-build", RealisticConfig, "LoRA")
TECHNICAL_SPEC = _spec("technical-build", TechnicalConfig, "all weights")
SHIFT_SPEC = _spec("shift-build", ShiftConfig, "all weights, plants inside speeches")
CONFIGS = {"realistic": RealisticConfig, "technical": TechnicalConfig, "shift": ShiftConfig}
