"""Domain reference model: the base briefly fine-tuned on a public in-domain sample.

A fine-tune is a domain shift: log p_θ(x) − log p_θ0(x) between the fine-tuned model θ and its
base θ0 is dominated by what the whole domain taught, and a memorised record drowns among the
texts that are mostly the domain's boilerplate. A reference θ_D, the base fine-tuned on public
text of the same domain (not the training set), has learnt the domain but not the record, so
log p_θ(x) − log p_θD(x) keeps what θ memorised and cancels what the domain taught (the
reference-model calibration of Carlini et al. 2021 and Mireshghallah et al. 2022, with a
reference trained for the domain). Attacks that compare two models use θ_D instead of θ0.

Training (``core.calibration.training``): LoRA adapters (peft, merged into the saved
weights) or all weights; a slice of the sample is held out and the weights of lowest held-out
loss are kept, so θ_D learns what generalises across the domain, not the sample's own texts.
The reference is saved under ``cache_home()/models/domain/<key>``, the key hashing the base's
fingerprint (``source_identity``: its files' contents), the sample's (its content, not its path,
``core.fingerprint``) and the settings: the same request returns the folder at once, and new
base weights at the same path train a new reference.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import threading
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

import torch

from core import paths
from core.calibration.config import (AUTO_STEPS_HELP, CPU_DOMAIN_STEPS, DOMAIN_STEPS,
                                     MAX_DOMAIN_STEPS)
from core.calibration.training import fine_tune
from core.readers.data import FORMATS_HELP, read_texts
from core.errors import UserError
from core.fingerprint import data_fingerprint
from core.models import default_registry, resolve_device
from core.models.loaders import load_source, source_identity
from core.runtime import Progress, check_cancel, no_progress
from core.serialize import from_jsonable, to_jsonable
from core.specs import AttackSpec, check_params, param
from core.calibration import cost as reference_cost

MIN_TEXTS = 10
FULL_LR, LORA_LR = 1e-4, 1e-3
LORA_FROM = 500_000_000  # parameters
RESULT_FILE = "domain-reference.json"
NOT_HASHED = ("base", "sample", "device", "force")  # named by their fingerprints instead


@dataclass(frozen=True)
class DomainReferenceConfig:
    """The base model, the public in-domain sample, and how briefly to fine-tune on it."""

    base: str = param("", label="base model", help="the model before fine-tuning: a folder, "
                      ".zip, .gguf, smollm2, a loaded name or a named source")
    sample: str = param("", label="public in-domain sample", help="public text of the "
                        f"fine-tune's domain, not its training set: {FORMATS_HELP}")
    steps: int = param(0, ge=0, le=MAX_DOMAIN_STEPS, help="most optimizer steps (the weights "
                       f"of lowest held-out loss are kept); {AUTO_STEPS_HELP}")
    lr: float = param(0.0, ge=0.0, le=1.0, label="learning rate", help="AdamW learning rate; "
                      f"0: {FULL_LR:g} for all weights, {LORA_LR:g} for LoRA")
    batch_size: int = param(8, ge=1, le=1024, help="texts per step")
    max_tokens: int = param(256, ge=8, le=8192, help="tokens kept of each text")
    holdout: float = param(0.1, gt=0.0, le=0.5, help="fraction of the sample held out to choose "
                           "the step (early stopping)")
    eval_every: int = param(20, ge=1, le=100_000, help="steps between two held-out measurements")
    weights: Literal["auto", "all", "lora"] = param(
        "auto", help="train all weights, or LoRA adapters (merged into the saved weights); auto: "
                     f"LoRA from {LORA_FROM // 10**6:,}M parameters (all weights take ~16 bytes "
                     "per parameter to train)")
    lora_rank: int = param(16, ge=1, le=1024, label="LoRA rank", help="rank of the adapters")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the held-out split and the batches")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="where to train")
    force: bool = param(False, help="train again even if this reference is cached")

    def __post_init__(self) -> None:
        check_params(self)
        if not self.base.strip():
            raise UserError("choose the base model (the model before fine-tuning)")
        if not self.sample.strip():
            raise UserError("choose a file of public in-domain text (the same kind of text as "
                            "the fine-tune's, not its training set)")
        if not self.steps:   # sized for where it trains, before the cache key and the cost see it
            on_cpu = resolve_device(self.device).type == "cpu"
            object.__setattr__(self, "steps", CPU_DOMAIN_STEPS if on_cpu else DOMAIN_STEPS)


@dataclass
class DomainReferenceResult:
    """The reference model's folder (a model source), what it was trained on and how well it
    learnt the domain: mean held-out loss (nats per token) of the base and of the reference."""

    folder: str
    base: str
    sample_texts: int
    heldout_texts: int
    lora: bool
    lr: float
    steps_run: int
    best_step: int
    heldout_loss_base: float
    heldout_loss_reference: float
    seconds: float
    cached: bool = False


def base_source(base: str) -> str:
    """The source of ``base``: a loaded model's name gives the source it was loaded from."""
    loaded = default_registry().get(base.strip())
    return loaded.source if loaded is not None else base.strip()


def reference_key(config: DomainReferenceConfig) -> str:
    """SHA-256 (16 hex) of the base's fingerprint (its source where it names no files here),
    the sample file's and every setting that changes the weights."""
    settings = {k: v for k, v in asdict(config).items() if k not in NOT_HASHED}
    base = base_source(config.base)
    blob = json.dumps([source_identity(base) or base, data_fingerprint(config.sample), settings],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def split_sample(texts: list[str], holdout: float, seed: int) -> tuple[list[str], list[str]]:
    """(training, held-out) texts: a seeded shuffle, ``holdout`` of them (at least one) held out."""
    if len(texts) < MIN_TEXTS:
        raise UserError(f"the public sample holds {len(texts)} texts: at least {MIN_TEXTS} are "
                        "needed (hundreds are better)")
    shuffled = list(texts)
    random.Random(seed).shuffle(shuffled)
    cut = max(1, round(holdout * len(shuffled)))
    return shuffled[cut:], shuffled[:cut]


def with_lora(model: torch.nn.Module, rank: int) -> torch.nn.Module:
    """``model`` with LoRA adapters (rank r, α = 2r) on every linear layer but the output."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise UserError("LoRA needs the peft package (`pip install peft`), or switch LoRA off "
                        "to train all weights") from None
    from transformers.pytorch_utils import Conv1D

    conv1d = any(isinstance(module, Conv1D) for module in model.modules())  # GPT-2's (in x out)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules="all-linear",
                        fan_in_fan_out=conv1d)
    return get_peft_model(model, config)


def _train(config: DomainReferenceConfig, texts: list[str], folder: Path, progress: Progress,
           cancel: threading.Event | None) -> DomainReferenceResult:
    """Fine-tune a fresh copy of the base (never the shared loaded one); save it in ``folder``."""
    started = time.perf_counter()
    train, heldout = split_sample(texts, config.holdout, config.seed)
    progress(0.02, "loading the base model")
    model, tokenizer, _ = load_source(base_source(config.base), dtype=torch.float32)
    model = model.to(resolve_device(config.device))
    lora = config.weights == "lora" or (config.weights == "auto"
                                        and model.num_parameters() >= LORA_FROM)
    if lora:
        model = with_lora(model, config.lora_rank)
    lr = config.lr or (LORA_LR if lora else FULL_LR)
    check_cancel(cancel)
    report_every = max(1, config.steps // 50)

    def on_step(step: int, loss: float) -> None:
        if step % report_every == 0 or step == config.steps:
            progress(0.05 + 0.9 * step / config.steps, f"step {step}/{config.steps}, "
                     f"loss {loss:.3f}")

    run = fine_tune(model, tokenizer, train, steps=config.steps, lr=lr,
                    batch_size=config.batch_size, max_tokens=config.max_tokens, seed=config.seed,
                    heldout=heldout, eval_every=config.eval_every, on_step=on_step, cancel=cancel)
    if lora:
        model = model.merge_and_unload()
    progress(0.96, "saving the reference model")
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return DomainReferenceResult(
        "", base_source(config.base), len(train), len(heldout), lora, lr, len(run.losses),
        run.best_step, run.heldout_before, run.heldout_best,
        round(time.perf_counter() - started, 2))


def run(config: DomainReferenceConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DomainReferenceResult:
    """The domain reference for ``config``: the cached one, else trained and cached. Training
    writes to a staging folder renamed at the end, so a cancelled or failed run caches nothing."""
    check_cancel(cancel)
    folder = paths.cache_home() / "models" / "domain" / reference_key(config)
    saved = folder / RESULT_FILE
    if saved.is_file() and not config.force:
        progress(1.0, "domain reference already trained")
        result = from_jsonable(DomainReferenceResult, json.loads(saved.read_text()))
        return replace(result, folder=str(folder), cached=True)
    staging = folder.with_name(f".partial-{uuid.uuid4().hex}")
    try:
        texts = read_texts(config.sample)
        result = replace(_train(config, texts, staging, progress, cancel), folder=str(folder))
        (staging / RESULT_FILE).write_text(json.dumps(to_jsonable(result)))
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(1.0, f"domain reference saved (held-out loss {result.heldout_loss_base:.3f} -> "
                  f"{result.heldout_loss_reference:.3f} nats/token)")
    return result


def tiny_config() -> DomainReferenceConfig:
    """A one-layer random GPT-2 and twelve short in-domain texts under ``home()/tiny``."""
    from core.models.tiny import tiny_random_models

    texts = [f"Ticket {n}: the {thing} is broken again. Kind regards, support."
             for n, thing in enumerate(("printer", "router", "laptop", "phone") * 3)]
    sample = paths.home() / "tiny" / "domain-sample.json"
    sample.parent.mkdir(parents=True, exist_ok=True)
    sample.write_text(json.dumps(texts), encoding="utf-8")
    base = tiny_random_models(texts, ["domain-base"])[0]
    return DomainReferenceConfig(base=base, sample=str(sample), steps=4, batch_size=4,
                                 eval_every=2, lr=1e-2, weights="all", device="cpu")


SPEC = AttackSpec(
    name="domain-reference",
    title="Domain reference model (the base fine-tuned on public in-domain text)",
    config_type=DomainReferenceConfig,
    result_type=DomainReferenceResult,
    run=run,
    tiny_config=tiny_config,
    describe=lambda c: f"domain reference: {c.base} on {Path(c.sample).name}",
    cost=reference_cost.domain_reference,
)
