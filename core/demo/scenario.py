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
``SPEC`` (``demo-build``) runs it as a recorded job: ``python -m core demo build [--tiny]``
and the pages' "Build the demo" button. The parts: ``config`` (what a build is), ``split``
(plays, users, insertions), ``manifest`` (the typed ground truth), ``paths`` (where a build
lives, light), ``sources`` (the ``demo:`` names as a ``core.sources`` plug-in).
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import torch

from core.demo import train
from core.demo.config import MODEL_NAMES, SECRET_PROMPT, USER_SPLITS, DemoConfig, tiny_config
from core.demo.manifest import (BuildChecks, Checks, DemoManifest, DemoSummary, make_manifest,
                                summary, write_data, write_manifest)
from core.demo.paths import (build_lock, clear_leftovers, data_file, demo_root, load_manifest,
                             model_dir, staging_folder, swap_in)
from core.demo.split import Split, make_split
from core.errors import UserError
from core.models import LoadedModel, tiny as lm
from core.scoring.threads import one_thread
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import score_texts
from core.specs import AttackSpec, check_params, param

__all__ = ["MODEL_NAMES", "SECRET_PROMPT", "SPEC", "USER_SPLITS", "DemoConfig", "build",
           "data_file", "demo_root", "load_manifest", "make_split", "model_dir", "tiny_config",
           "update_stream"]


def build(config: DemoConfig | None = None, *, force: bool = False, root: Path | None = None,
          progress: Progress = no_progress, cancel: threading.Event | None = None) -> DemoManifest:
    """Build (or reuse) the demo under ``root`` (default ``home()/demo``); return the manifest.

    A build whose manifest has the same config hash is reused unless ``force``. Builds of one
    folder take turns (``paths.build_lock``: a second one waits, then reuses the first's build
    or, with ``force``, rebuilds); each writes to a staging folder of its own, swapped in at
    the end, so a cancelled, failed or killed build leaves the previous one intact. Training
    runs on one CPU thread: the same weights on any machine, and for models this small it is
    faster than several threads fighting over a busy CPU (measured: about 3x on a loaded
    2-core box).
    """
    config = config or DemoConfig()
    root = Path(root) if root else demo_root()
    with build_lock(root, progress=progress, cancel=cancel):
        clear_leftovers(root)
        if not force and _is_current(root, config):
            progress(1.0, "demo already built")
            return load_manifest(root)
        staging = staging_folder(root)
        try:
            with one_thread():
                _build_into(staging, config, progress, cancel)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        swap_in(staging, root)
        manifest = load_manifest(root)
    progress(1.0, "demo built")
    return manifest


def _is_current(root: Path, config: DemoConfig) -> bool:
    try:
        manifest = load_manifest(root)
    except UserError:  # none, or one of another version
        return False
    return manifest.config_hash == config.config_hash() and all(
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
    model = lm.disable_dropout(lm.new_gpt2(
        tokenizer, n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
        n_positions=config.n_positions, seed=config.seed))
    report = _step_reporter(progress, config.base_steps + config.update_steps)
    train_args = dict(batch_size=config.batch_size, block_size=config.n_positions, cancel=cancel)
    base_losses = train.train_lm(model, public, steps=config.base_steps, lr=config.base_lr,
                                 seed=config.seed, on_step=report(0, "demo:base"), **train_args)
    lm.save_hf_folder(model, tokenizer, folder / "base")
    base_checks = _checks(model, tokenizer, split, validation, config)
    update_losses = train.train_lm(model, torch.cat([private, mix]), steps=config.update_steps,
                                   lr=config.update_lr, seed=config.seed + 1,
                                   on_step=report(config.base_steps, "demo:updated"), **train_args)
    lm.save_hf_folder(model, tokenizer, folder / "updated")
    progress(0.96, "writing the manifest")
    tokens = {"public_train": len(public), "private_train": len(private),
              "update_public_mix": len(mix), "validation": len(validation),
              "base_training": config.base_steps * config.batch_size * config.n_positions,
              "update_training": config.update_steps * config.batch_size * config.n_positions}
    checks = BuildChecks(base_checks, _checks(model, tokenizer, split, validation, config),
                         {"base": base_losses[-1], "updated": update_losses[-1]})
    manifest = make_manifest(config, split, parameters=model.num_parameters(),
                             vocab_size=len(tokenizer), tokens=tokens, checks=checks)
    write_data(folder / "data", split)
    manifest.build_seconds = round(time.perf_counter() - started, 1)
    write_manifest(folder, manifest)


def _step_reporter(progress: Progress, total: int):
    """``report(offset, what)``: a training loop's step callback reporting overall progress."""
    def report(offset: int, what: str):
        def on_step(step: int, loss: float):
            if step % 5 == 0 or step == 1:
                progress(0.05 + 0.9 * (offset + step) / total, f"{what}: step {step}, loss {loss:.2f}")
        return on_step
    return report


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


def _checks(model, tokenizer, split: Split, validation: torch.Tensor, config: DemoConfig) -> Checks:
    """Sanity numbers stored in the manifest: validation perplexity, secret/canary log-probs."""
    view = LoadedModel.in_memory("demo build", model, tokenizer)
    phrases = [split.secret, SECRET_PROMPT] + [phrase for phrase, _ in config.canaries]
    scores = [s.total_logprob for s in score_texts(view, phrases)]
    return Checks(
        validation_perplexity=train.stream_perplexity(model, validation,
                                                      block_size=config.n_positions),
        secret_logprob=scores[0], secret_digits_logprob=scores[0] - scores[1],
        canary_logprobs=scores[2:])


# ---------------------------------------------------------------- the build as a spec


@dataclass(frozen=True)
class DemoBuildConfig:
    """What ``python -m core demo build`` and the pages' "Build the demo" button choose."""

    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the plays' split, data order and weights")
    user_split: Literal[("default", *USER_SPLITS)] = param(
        "default", help="how users are split into held-in and held-out (default: by-play for "
                        "the full build, within-play for the tiny one): "
                        + "; ".join(f"{k}: {v}" for k, v in USER_SPLITS.items()))
    size: Literal["full", "tiny"] = param("full", help="full (minutes on a CPU) or tiny "
                                                       "(seconds, for tests)")
    force: bool = param(False, help="rebuild even if a build of this config is cached")

    def __post_init__(self):
        check_params(self)

    def demo_config(self) -> DemoConfig:
        """The ``DemoConfig`` these options build."""
        config = tiny_config(self.seed) if self.size == "tiny" else DemoConfig(seed=self.seed)
        return config if self.user_split == "default" else replace(config, user_split=self.user_split)


def run_build(config: DemoBuildConfig, *, progress: Progress = no_progress,
              cancel: threading.Event | None = None) -> DemoSummary:
    """Build (or reuse) the demo under ``home()/demo``; a cancel set meanwhile raises
    ``Cancelled`` even when a cached build made it instant, so a cancelled request never reads
    as a finished one."""
    manifest = build(config.demo_config(), force=config.force, progress=progress, cancel=cancel)
    check_cancel(cancel)
    return summary(manifest)


SPEC = AttackSpec(
    name="demo-build", title="Build the demo scenario", config_type=DemoBuildConfig,
    result_type=DemoSummary, run=run_build,
    tiny_config=lambda: DemoBuildConfig(size="tiny"), uses_gpu=lambda config: False,
    headline=lambda summary: {"build_seconds": summary.build_seconds},
    describe=lambda c: f"demo scenario build ({c.size}, seed {c.seed})")
