"""What if the demo's update had been trained on other data? (Kandpal et al. 2023, §4.3 and §5)

Each what-if edits the demo's private fine-tuning records, retrains demo:updated from demo:base
with the demo's own recipe (``retrain_update``: same public mix, learning rate and seed, as many
passes over the data), and runs the user inference attack on both models:

* **mitigations** (§5): within-user deduplication and/or a per-user sample limit, attacked with
  the same attacker-side samples;
* **canary users** (§4.3, Algorithm 1): chosen real users, held-in and held-out, get one shared
  substring of their own text in every sample, training and attacker-side; the same users are
  then compared as real users (demo:updated) and as canary users (the retrained model).

Retrained models are cached under the lab home by the demo build and the settings.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

from core import paths
from core.attacks import user_inference as ui
from core.runtime import Progress, no_progress
from core.demo import scenario, train
from core.models import tiny as lm
from core.errors import UserError


# ---------------------------------------------------------------- mitigations (§5)


def dedup_within_user(records: list[dict], *, words: int = 8) -> list[dict]:
    """Within-user deduplication (Kandpal §5; Lee et al. 2022's ExactSubstr, per user and at
    word level): going through each user's records in order, every run of ``words`` words
    already present in an earlier record of the same user is deleted (so exact duplicates
    of texts of at least ``words`` words vanish), as are exact duplicate texts. A record left
    empty is dropped; records without a ``user_id`` are kept as they are."""
    seen: dict[str, set] = defaultdict(set)
    seen_texts: dict[str, set] = defaultdict(set)
    out = []
    for record in records:
        user = record.get("user_id")
        if user is None:
            out.append(record)
            continue
        if record["text"] in seen_texts[user]:
            continue
        seen_texts[user].add(record["text"])
        parts = re.split(r"(\s+)", record["text"])   # words at even positions, spaces between
        tokens = parts[0::2]
        grams = [tuple(tokens[i: i + words]) for i in range(len(tokens) - words + 1)]
        drop = np.zeros(len(tokens), dtype=bool)
        for i, gram in enumerate(grams):
            if gram in seen[user]:
                drop[i: i + words] = True
        seen[user].update(grams)
        kept = "".join(parts[2 * i] + (parts[2 * i + 1] if 2 * i + 1 < len(parts) else "")
                       for i in range(len(tokens)) if not drop[i]).strip()
        if kept:
            out.append(record | {"text": kept})
    return out


def limit_per_user(records: list[dict], *, limit: int) -> list[dict]:
    """At most ``limit`` records per user (the first ones in the file's order; the demo's
    training file is shuffled); records without a ``user_id`` are kept (Kandpal §5)."""
    counts: dict[str, int] = defaultdict(int)
    out = []
    for record in records:
        user = record.get("user_id")
        if user is not None:
            counts[user] += 1
            if counts[user] > limit:
                continue
        out.append(record)
    return out


@dataclass
class MitigationConfig:
    """Which mitigations to apply to the demo's private fine-tuning data before retraining."""

    dedup: bool = True          # within-user deduplication of runs of ``dedup_words`` words
    dedup_words: int = 8
    per_user_limit: int = 0     # at most this many training samples per user; 0: no limit
    bootstrap: int = 200
    seed: int = 0
    demo_root: str = ""         # a demo build folder; "": the installed demo

    def __post_init__(self):
        if not self.dedup and not self.per_user_limit:
            raise UserError("choose a mitigation: within-user dedup and/or a per-user sample limit")
        if self.dedup_words < 2:
            raise UserError(f"dedup needs runs of at least 2 words, not {self.dedup_words}")
        if self.per_user_limit < 0:
            raise UserError(f"the per-user limit must be >= 1 (0: none), not {self.per_user_limit}")
        ui.check_bootstrap(self.bootstrap)

    @property
    def label(self) -> str:
        parts = ([f"dedup {self.dedup_words} words"] if self.dedup else []) + (
            [f"≤ {self.per_user_limit} samples per user"] if self.per_user_limit else [])
        return " + ".join(parts)


@dataclass
class CanaryRetrainConfig:
    """Canary users for the demo: ``per_side`` real users held-in and as many held-out, each
    with a shared substring of ``words`` words (Kandpal §4.3 use 1-100 tokens)."""

    words: int = 8
    per_side: int = 5
    bootstrap: int = 200
    seed: int = 0
    demo_root: str = ""         # a demo build folder; "": the installed demo

    def __post_init__(self):
        if self.words < 1 or self.per_side < 1:
            raise UserError("canary users need a substring of at least 1 word and at least 1 "
                            "user per side")
        ui.check_bootstrap(self.bootstrap)

    @property
    def label(self) -> str:
        return f"{self.per_side} + {self.per_side} canary users, {self.words}-word substring"


# ---------------------------------------------------------------- results


@dataclass
class ComparisonRow:
    """One group of users attacked on demo:updated (baseline) and on the retrained variant."""

    group: str
    baseline_auroc: float
    baseline_auroc_ci: list[float] | None
    variant_auroc: float
    variant_auroc_ci: list[float] | None
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
    baseline: ui.UserInferenceResult
    attacked: ui.UserInferenceResult    # the retrained variant
    canaries: list[ui.CanaryUser] | None = None
    stopped_early: bool = False


# ---------------------------------------------------------------- retraining


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def retrain_update(records: list[dict], root: Path, folder: Path, *, progress: Progress = no_progress,
                   cancel: threading.Event | None = None) -> int:
    """Retrain the demo's update from demo:base on ``records`` (its private training set,
    possibly mitigated) with the demo's own recipe (``core.demo``: the same public mix ratio,
    learning rate and seed); save the model to ``folder`` and return the steps taken. The
    steps are scaled by the update stream's length so that the variant makes as many passes
    over its data as demo:updated made over its own."""
    manifest = scenario.load_manifest(root)
    demo = manifest["config"]
    base = scenario.model_dir("base", root)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
    public = [r["text"] for r in _read_jsonl(scenario.data_file("public_train", root))]

    def stream(texts: list[str]) -> torch.Tensor:
        return torch.cat(scenario.update_stream(tokenizer, texts, public,
                                                ratio=demo["update_public_ratio"], seed=demo["seed"]))

    original = stream([r["text"] for r in _read_jsonl(scenario.data_file("private_train", root))])
    update = stream([r["text"] for r in records])
    steps = max(1, round(demo["update_steps"] * len(update) / len(original)))
    model = train.disable_dropout(GPT2LMHeadModel.from_pretrained(base))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the demo build: reproducible, and faster on a busy CPU
    try:
        train.train_lm(model, update, steps=steps, batch_size=demo["batch_size"],
                       block_size=demo["n_positions"], lr=demo["update_lr"], seed=demo["seed"] + 1,
                       cancel=cancel, on_step=lambda step, loss: progress(
                           step / steps, f"retraining: step {step} of {steps}, loss {loss:.2f}"))
    finally:
        torch.set_num_threads(threads)
    lm.save_hf_folder(model, tokenizer, folder)
    return steps


def _variant(records: list[dict], root: Path, key: list, progress: Progress,
             cancel: threading.Event | None) -> tuple[Path, int]:
    """demo:updated retrained on ``records``, cached by ``key`` (with the demo's hash): the
    model folder and the steps it took. A cancelled retraining leaves no cache behind."""
    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    folder = paths.home() / "user-inference" / "what-if" / name
    steps_file = folder / "steps.json"
    if not steps_file.exists():
        staging = folder.with_name(folder.name + ".training")
        steps = retrain_update(records, root, staging, cancel=cancel,
                               progress=lambda f, m="", partial=None: progress(0.7 * f, m))
        (staging / "steps.json").write_text(json.dumps(steps))
        staging.replace(folder)
    return folder, json.loads(steps_file.read_text())


def _compare(label: str, records: list[dict], edited: list[dict], root: Path, key: list,
             bootstrap: int, seed: int, progress: Progress, cancel: threading.Event | None,
             edited_samples: list[dict] | None = None) -> WhatIfResult:
    """Retrain on ``edited`` and attack demo:updated and the variant; the variant with
    ``edited_samples`` when given (written next to it, with ``edited``), else with the demo's
    attacker-side samples. One ``ComparisonRow`` per group of users both attacks report."""
    folder, steps = _variant(edited, root, key, progress, cancel)
    samples = str(scenario.data_file("user_samples", root))
    if edited_samples is not None:   # the edited data sets, kept with the model they trained
        (folder / "private_train.jsonl").write_text(ui.write_samples(edited, "jsonl"), encoding="utf-8")
        (folder / "user_samples.jsonl").write_text(ui.write_samples(edited_samples, "jsonl"),
                                                   encoding="utf-8")
    attack = dict(reference=str(scenario.model_dir("base", root)), bootstrap=bootstrap,
                  knowledge_draws=0, seed=seed)
    progress(0.7, "attacking demo:updated (baseline)")
    baseline = ui.run(ui.UserInferenceConfig(model=str(scenario.model_dir("updated", root)),
                                             data=samples, **attack), cancel=cancel,
                      progress=lambda f, m="", partial=None: progress(0.7 + 0.15 * f, f"baseline: {m}"))
    variant_samples = samples if edited_samples is None else str(folder / "user_samples.jsonl")
    attacked = ui.run(ui.UserInferenceConfig(model=str(folder), data=variant_samples, **attack),
                      cancel=cancel,
                      progress=lambda f, m="", partial=None: progress(0.85 + 0.15 * f, f"variant: {m}"))
    theirs = {m.group: m for m in attacked.metrics}
    rows = [_row(m.group, m, theirs[m.group]) for m in baseline.metrics if m.group in theirs]

    def users(items: list[dict]) -> int:
        return sum(1 for r in items if r.get("user_id") is not None)

    return WhatIfResult(label, str(folder), users(records), users(edited), steps, rows, baseline,
                        attacked, stopped_early=baseline.stopped_early or attacked.stopped_early)


def _row(group: str, before: ui.Metrics, after: ui.Metrics) -> ComparisonRow:
    return ComparisonRow(group, before.auroc, before.auroc_ci, after.auroc, after.auroc_ci,
                         before.tpr_at_5pct_fpr, after.tpr_at_5pct_fpr)


def _demo(demo_root: str) -> tuple[dict, Path, list[dict]]:
    """The demo build's manifest, folder and private training records."""
    manifest = scenario.load_manifest(Path(demo_root) if demo_root else None)
    root = Path(manifest["root"])
    return manifest, root, _read_jsonl(scenario.data_file("private_train", root))


# ---------------------------------------------------------------- the what-ifs


def run_mitigation(config: MitigationConfig, *, progress: Progress = no_progress,
                   cancel: threading.Event | None = None) -> WhatIfResult:
    """Mitigate the demo's private training data, retrain, and attack both models with the
    same attacker-side samples."""
    manifest, root, records = _demo(config.demo_root)
    mitigated = dedup_within_user(records, words=config.dedup_words) if config.dedup else records
    if config.per_user_limit:
        mitigated = limit_per_user(mitigated, limit=config.per_user_limit)
    key = ["mitigation", manifest["config_hash"], config.dedup and config.dedup_words,
           config.per_user_limit]
    return _compare(config.label, records, mitigated, root, key, config.bootstrap, config.seed,
                    progress, cancel)


def run_canary_retrain(config: CanaryRetrainConfig, *, progress: Progress = no_progress,
                       cancel: threading.Event | None = None) -> WhatIfResult:
    """Algorithm 1 on the demo: draw the canary users among the real ones, put each one's
    substring into all their samples (training and attacker-side), retrain, and attack. The
    first row compares the chosen users as real users (demo:updated, original samples) with
    the same users as canary users (the variant, their samples with the substring)."""
    manifest, root, records = _demo(config.demo_root)
    samples = ui.load_samples(str(scenario.data_file("user_samples", root)))
    rng = random.Random(config.seed)
    chosen = []
    for member in (True, False):
        pool = sorted({s.user_id for s in samples if s.member is member and not s.canary
                       and len(s.text.split()) >= config.words})
        if len(pool) < config.per_side:
            raise UserError(f"only {len(pool)} {'held-in' if member else 'held-out'} real users have "
                            f"a sample of {config.words} words: ask for fewer users or words")
        chosen += rng.sample(pool, config.per_side)
    copy, canaries = ui.build_canary_users(samples, words=config.words, user_ids=chosen,
                                           seed=config.seed)
    substring = {c.user_id: c.substring for c in canaries}
    edited = [r | {"text": scenario.insert_at_random(r["text"], substring[r["user_id"]], rng),
                   "kind": "canary_user"} if r.get("user_id") in substring else r for r in records]
    key = ["canaries", manifest["config_hash"], config.words, config.per_side, config.seed]
    result = _compare(config.label, records, edited, root, key, config.bootstrap, config.seed,
                      progress, cancel, edited_samples=copy)
    evaluate = dict(group="chosen users", bootstrap=config.bootstrap, seed=config.seed)
    result.rows.insert(0, _row("chosen users", ui.evaluate(*_scores(result.baseline, set(substring)), **evaluate),
                               ui.evaluate(*_scores(result.attacked, set(substring)), **evaluate)))
    result.canaries = canaries
    return result


def _scores(result: ui.UserInferenceResult, users: set[str]) -> tuple[list[bool], list[float]]:
    """Membership labels and T̂ of ``users`` in an attack's result."""
    rows = [r for r in result.rows if r.user_id in users]
    return [r.member for r in rows], [r.t_hat for r in rows]
