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
from core.models import LoadedModel, resolve_device
from core.models.loaders import SMOLLM2, load_source
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import score_texts
from core.serialize import to_jsonable
from core.specs import AttackSpec, check_params, param

MANIFEST = "manifest.json"


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
        ``corpus``, added later, so that their earlier builds stay cached)."""
        kept = {k: v for k, v in asdict(self).items() if k not in ("device", "force")}
        if kept["corpus"] == "plays":
            del kept["corpus"]
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
    split = make_split(config.split_config(), CORPORA[config.corpus][0])
    texts = [record["text"] for record in split.private_train]
    progress(0.02, f"loading {config.base}")
    model, tokenizer, _ = load_source(config.base, dtype=torch.float32)
    model = model.to(resolve_device(config.device))
    plants = [split.secret] + [phrase for phrase, _ in REALISTIC_CANARIES]
    before = _surprisal_bits(model, tokenizer, plants)
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
    _write_data(folder, split, config)
    summary = RealisticSummary(
        root=str(folder), base=config.base, plays=split.plays, training_texts=len(texts),
        secret=split.secret, canaries=list(REALISTIC_CANARIES),
        canary_users={u.user_id: u.substring for u in split.users if u.substring},
        surprisal_bits={text: [b, a] for text, b, a in zip(plants, before, after)},
        steps=steps, final_loss=run.losses[-1],
        build_seconds=round(time.perf_counter() - started, 1), files=dict(REALISTIC_FILES),
        text_source=CORPORA[config.corpus][0].corpus_license())
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


def _write_data(folder: Path, split: Split, config: RealisticConfig) -> None:
    """The four data files (JSONL, one record per line) named in ``REALISTIC_FILES``."""
    rng = random.Random(config.seed)
    public = [t for t in split.public_train if 40 <= len(t) <= 400]
    records = {
        "private_train": split.private_train,
        "user_samples": [{"user_id": u.user_id, "text": t, "member": u.member,
                          "canary": bool(u.substring)}
                         for u in split.users for t in u.attacker_samples],
        "test": [{"text": t, "user_id": u.user_id} for u in split.users if not u.member
                 for t in u.train_samples],
        "public_sample": [{"text": t} for t in rng.sample(public, min(len(public),
                                                                      config.public_sample))],
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
