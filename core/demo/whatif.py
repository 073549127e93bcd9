"""What if the demo's update had been trained on other data? (Kandpal et al. 2023, §4.3 and §5)

Each what-if edits the demo's private fine-tuning records, retrains demo:updated from demo:base
with the demo's own recipe (``retrain_update``: same public mix, learning rate and seed, as many
passes over the data), and runs the user inference attack on both models:

* **mitigations** (§5, ``MITIGATION_SPEC``): within-user deduplication and/or a per-user sample
  limit, attacked with the same attacker-side samples;
* **canary users** (§4.3, Algorithm 1, ``CANARY_RETRAIN_SPEC``): chosen real users, held-in and
  held-out, get one shared substring of their own text in every sample, training and
  attacker-side; the same users are then compared as real users (demo:updated) and as canary
  users (the retrained model).

Retrained models are cached under the lab home by the demo build and the settings. Results
keep the per-user rows of both attacks but not their per-sample scores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

from core import paths
from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.canaries import CanaryUser, build_canary_users, insert_at_random
from core.attacks.user_inference.mitigations import dedup_within_user, limit_per_user
from core.attacks.user_inference.samples import load_samples, write_samples
from core.readers.data import read_records, read_texts
from core.demo import scenario, train
from core.demo.manifest import DemoManifest
from core.errors import UserError
from core.evaluation import membership as me
from core.models import tiny as lm
from core.scoring.threads import one_thread
from core.runtime import Progress, no_progress
from core.specs import AttackSpec, check_params, param

BASELINE = "demo:updated"


# ---------------------------------------------------------------- configs and results


@dataclass(frozen=True)
class RetrainSettings:
    """What every what-if takes: the demo build, the attacks' bootstrap and their device."""

    bootstrap: int = me.bootstrap_param(200)
    seed: int = param(0, ge=0, le=2**31 - 1, page="advanced",
                      help="seed of the bootstrap (and of the canary draws)")
    demo_root: str = param("", path="folder", help="a demo build folder; empty: the installed demo")
    device: Literal["auto", "cpu", "cuda"] = param(
        "auto", page="advanced",
        help="where to load the models the attack compares (retraining is on the CPU)")

    def __post_init__(self) -> None:
        check_params(self)
        me.check_bootstrap(self.bootstrap)


@dataclass(frozen=True)
class MitigationConfig(RetrainSettings):
    """Which mitigations to apply to the demo's private fine-tuning data before retraining."""

    dedup: bool = param(True, label="within-user dedup",
                        help="delete every run of dedup_words words a user already wrote in an "
                             "earlier training sample")
    dedup_words: int = param(8, ge=2, le=100, label="dedup run (words)",
                             help="dedup removes repeated runs of this many words")
    per_user_limit: int = param(0, ge=0, le=100_000, label="per-user limit (0: none)",
                                help="keep at most this many training samples per user; 0: no limit")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.dedup and not self.per_user_limit:
            raise UserError("choose a mitigation: within-user dedup and/or a per-user sample limit")

    @property
    def label(self) -> str:
        parts = ([f"dedup {self.dedup_words} words"] if self.dedup else []) + (
            [f"≤ {self.per_user_limit} samples per user"] if self.per_user_limit else [])
        return " + ".join(parts)


@dataclass(frozen=True)
class CanaryRetrainConfig(RetrainSettings):
    """Canary users for the demo: ``per_side`` real users held-in and as many held-out, each
    with a shared substring of ``words`` words (Kandpal §4.3 use 1-100 tokens)."""

    words: int = param(8, ge=1, le=100, widget="slider", label="shared substring (words)",
                       help="words in each canary user's shared substring")
    per_side: int = param(5, ge=1, le=100, label="canary users per side",
                          help="real users made canaries among the held-in, and as many among "
                               "the held-out")

    @property
    def label(self) -> str:
        return f"{self.per_side} + {self.per_side} canary users, {self.words}-word substring"


@dataclass
class ComparisonRow:
    """One group of users attacked on demo:updated (baseline) and on the retrained variant."""

    group: str
    baseline_auroc: float
    baseline_auroc_ci: list[float]      # empty without bootstrap
    variant_auroc: float
    variant_auroc_ci: list[float]
    baseline_tpr_at_5pct_fpr: float
    variant_tpr_at_5pct_fpr: float


@dataclass
class WhatIfResult:
    variant: str                # what was changed
    model_folder: str
    user_samples_before: int    # private training records of users
    user_samples_after: int
    steps: int                  # update steps (scaled: same passes over the data as demo:updated)
    rows: list[ComparisonRow]
    baseline: ui.UserInferenceResult    # demo:updated (without per-sample scores)
    attacked: ui.UserInferenceResult    # the retrained variant (without per-sample scores)
    stopped_early: bool = False


@dataclass
class CanaryRetrainResult(WhatIfResult):
    canaries: list[CanaryUser] = field(default_factory=list)


# ---------------------------------------------------------------- retraining


def read_plain_records(source: str | Path) -> list[dict]:
    """The records of a data file, a missing value as None (as the demo writes it)."""
    table = read_records(str(source)).astype(object)
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
            for row in table.to_dict("records")]


def retrain_update(records: list[dict], root: Path, folder: Path, *, progress: Progress = no_progress,
                   cancel: threading.Event | None = None) -> int:
    """Retrain the demo's update from demo:base on ``records`` (its private training set,
    possibly mitigated) with the demo's own recipe (the same public mix ratio, learning rate
    and seed); save the model to ``folder`` and return the steps taken. The steps are scaled by
    the update stream's length so that the variant makes as many passes over its data as
    demo:updated made over its own."""
    demo = scenario.load_manifest(root).config
    base = scenario.model_dir("base", root)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
    public = read_texts(str(scenario.data_file("public_train", root)))

    def stream(texts: list[str]) -> torch.Tensor:
        return torch.cat(scenario.update_stream(tokenizer, texts, public,
                                                ratio=demo.update_public_ratio, seed=demo.seed))

    original = stream([r["text"] for r in read_plain_records(scenario.data_file("private_train", root))])
    update = stream([r["text"] for r in records])
    steps = max(1, round(demo.update_steps * len(update) / len(original)))
    model = lm.disable_dropout(GPT2LMHeadModel.from_pretrained(base))
    with one_thread():  # as the demo build: reproducible, and faster on a busy CPU
        train.train_lm(model, update, steps=steps, batch_size=demo.batch_size,
                       block_size=demo.n_positions, lr=demo.update_lr, seed=demo.seed + 1,
                       cancel=cancel, on_step=lambda step, loss: progress(
                           step / steps, f"retraining: step {step} of {steps}, loss {loss:.2f}"))
    lm.save_hf_folder(model, tokenizer, folder)
    return steps


def _variant(records: list[dict], root: Path, key: list, progress: Progress,
             cancel: threading.Event | None) -> tuple[Path, int]:
    """demo:updated retrained on ``records``, cached by ``key`` (with the demo's hash): the
    model folder and the steps it took. A cancelled retraining leaves no cache behind."""
    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    folder = paths.cache_home() / "user-inference" / "what-if" / name
    steps_file = folder / "steps.json"
    if not steps_file.exists():
        staging = folder.with_name(folder.name + ".training")
        steps = retrain_update(records, root, staging, cancel=cancel,
                               progress=lambda f, m="", partial=None: progress(0.7 * f, m))
        (staging / "steps.json").write_text(json.dumps(steps))
        staging.replace(folder)
    return folder, json.loads(steps_file.read_text())


def _attack(model: Path, data: str, root: Path, settings: RetrainSettings, progress: Progress,
            cancel: threading.Event | None) -> ui.UserInferenceResult:
    """User inference on ``model`` against demo:base, without the curve or per-sample scores."""
    result = ui.run(ui.UserInferenceConfig(
        model=str(model), reference=str(scenario.model_dir("base", root)), data=data,
        bootstrap=settings.bootstrap, knowledge_draws=0, seed=settings.seed,
        device=settings.device),
        progress=progress, cancel=cancel)
    result.samples = []
    return result


def _compare(config: MitigationConfig | CanaryRetrainConfig, records: list[dict],
             edited: list[dict], root: Path, key: list, progress: Progress,
             cancel: threading.Event | None, edited_samples: list[dict] | None = None
             ) -> WhatIfResult:
    """Retrain on ``edited`` and attack demo:updated and the variant; the variant with
    ``edited_samples`` when given (written next to it, with ``edited``), else with the demo's
    attacker-side samples. One ``ComparisonRow`` per group of users both attacks report."""
    folder, steps = _variant(edited, root, key, progress, cancel)
    samples = variant_samples = str(scenario.data_file("user_samples", root))
    if edited_samples is not None:   # the edited data sets, kept with the model they trained
        (folder / "private_train.jsonl").write_text(write_samples(edited, "jsonl"), encoding="utf-8")
        variant_samples = str(folder / "user_samples.jsonl")
        Path(variant_samples).write_text(write_samples(edited_samples, "jsonl"), encoding="utf-8")
    progress(0.7, f"attacking {BASELINE} (baseline)")
    baseline = _attack(scenario.model_dir("updated", root), samples, root, config,
                       lambda f, m="", partial=None: progress(0.7 + 0.15 * f, f"baseline: {m}"),
                       cancel)
    attacked = _attack(folder, variant_samples, root, config,
                       lambda f, m="", partial=None: progress(0.85 + 0.15 * f, f"variant: {m}"),
                       cancel)
    theirs = {m.group: m for m in attacked.metrics}
    rows = [_row(m.group, m, theirs[m.group]) for m in baseline.metrics if m.group in theirs]

    def users(items: list[dict]) -> int:
        return sum(1 for r in items if r.get("user_id") is not None)

    return WhatIfResult(config.label, str(folder), users(records), users(edited), steps, rows, baseline,
                        attacked, stopped_early=baseline.stopped_early or attacked.stopped_early)


def _row(group: str, before: me.Metrics, after: me.Metrics) -> ComparisonRow:
    return ComparisonRow(group, before.auroc, before.auroc_ci, after.auroc, after.auroc_ci,
                         before.tpr_at_5pct_fpr, after.tpr_at_5pct_fpr)


def _demo(demo_root: str) -> tuple[DemoManifest, Path, list[dict]]:
    """The demo build's manifest, folder and private training records."""
    manifest = scenario.load_manifest(Path(demo_root) if demo_root else None)
    root = Path(manifest.root)
    return manifest, root, read_plain_records(scenario.data_file("private_train", root))


# ---------------------------------------------------------------- the what-ifs


def run_mitigation(config: MitigationConfig, *, progress: Progress = no_progress,
                   cancel: threading.Event | None = None) -> WhatIfResult:
    """Mitigate the demo's private training data, retrain, and attack both models with the
    same attacker-side samples."""
    manifest, root, records = _demo(config.demo_root)
    mitigated = dedup_within_user(records, words=config.dedup_words) if config.dedup else records
    if config.per_user_limit:
        mitigated = limit_per_user(mitigated, limit=config.per_user_limit)
    key = ["mitigation", manifest.config_hash, config.dedup and config.dedup_words,
           config.per_user_limit]
    return _compare(config, records, mitigated, root, key, progress, cancel)


def _choose_users(samples, config: CanaryRetrainConfig, rng: random.Random) -> list[str]:
    """``per_side`` real held-in users and as many held-out, each with a long enough sample."""
    chosen = []
    for member in (True, False):
        pool = sorted({s.user_id for s in samples if s.member is member and not s.canary
                       and len(s.text.split()) >= config.words})
        if len(pool) < config.per_side:
            raise UserError(f"only {len(pool)} {'held-in' if member else 'held-out'} real users have "
                            f"a sample of {config.words} words: ask for fewer users or words")
        chosen += rng.sample(pool, config.per_side)
    return chosen


def run_canary_retrain(config: CanaryRetrainConfig, *, progress: Progress = no_progress,
                       cancel: threading.Event | None = None) -> CanaryRetrainResult:
    """Algorithm 1 on the demo: draw the canary users among the real ones, put each one's
    substring into all their samples (training and attacker-side), retrain, and attack. The
    first row compares the chosen users as real users (demo:updated, original samples) with
    the same users as canary users (the variant, their samples with the substring)."""
    manifest, root, records = _demo(config.demo_root)
    samples = load_samples(str(scenario.data_file("user_samples", root)))
    rng = random.Random(config.seed)
    copy, canaries = build_canary_users(samples, words=config.words,
                                        user_ids=_choose_users(samples, config, rng), seed=config.seed)
    substring = {c.user_id: c.substring for c in canaries}
    edited = [r | {"text": insert_at_random(r["text"], substring[r["user_id"]], rng),
                   "kind": "canary_user"} if r.get("user_id") in substring else r for r in records]
    key = ["canaries", manifest.config_hash, config.words, config.per_side, config.seed]
    result = _compare(config, records, edited, root, key, progress, cancel, edited_samples=copy)
    evaluate = dict(group="chosen users", bootstrap=config.bootstrap, seed=config.seed)
    result.rows.insert(0, _row("chosen users",
                               me.evaluate(*_scores(result.baseline, set(substring)), **evaluate),
                               me.evaluate(*_scores(result.attacked, set(substring)), **evaluate)))
    return CanaryRetrainResult(**vars(result), canaries=canaries)


def _scores(result: ui.UserInferenceResult, users: set[str]) -> tuple[list[bool], list[float]]:
    """Membership labels and T̂ of ``users`` in an attack's result."""
    rows = [r for r in result.rows if r.user_id in users]
    return [r.member for r in rows], [r.t_hat for r in rows]


# ---------------------------------------------------------------- the specs


def micro_demo_config() -> scenario.DemoConfig:
    """The demo's tiny config shrunk further (one layer, 45 steps: seconds), for tiny runs and tests."""
    return dataclasses.replace(scenario.tiny_config(), vocab_size=300, n_layer=1, n_embd=32,
                               base_steps=5, update_steps=40, validation_tokens=500)


def micro_demo() -> str:
    """The micro demo, built once under ``cache_home()/tiny/micro-demo``."""
    return scenario.build(micro_demo_config(), root=paths.cache_home() / "tiny" / "micro-demo").root


def _headline(result: WhatIfResult) -> dict:
    """Baseline and variant AUROC of every group, and the retraining's size."""
    aurocs = {f"{r.group}: {side} AUROC": getattr(r, f"{side}_auroc")
              for r in result.rows for side in ("baseline", "variant")}
    return aurocs | {"steps": result.steps, "user_samples_after": result.user_samples_after}


MITIGATION_SPEC = AttackSpec(
    name="user-inference-mitigate",
    title="User inference what-if: mitigations (Kandpal et al. 2023, §5)",
    config_type=MitigationConfig,
    result_type=WhatIfResult,
    run=run_mitigation,
    tiny_config=lambda: MitigationConfig(dedup=False, per_user_limit=1, bootstrap=0,
                                         demo_root=micro_demo()),
    headline=_headline,
    describe=lambda c: f"user inference mitigation: {c.label}",
)

CANARY_RETRAIN_SPEC = AttackSpec(
    name="user-inference-canary-retrain",
    title="User inference what-if: canary users (Kandpal et al. 2023, §4.3)",
    config_type=CanaryRetrainConfig,
    result_type=CanaryRetrainResult,
    run=run_canary_retrain,
    tiny_config=lambda: CanaryRetrainConfig(words=4, per_side=1, bootstrap=0,
                                            demo_root=micro_demo()),
    headline=_headline,
    describe=lambda c: f"user inference: {c.label}",
)
