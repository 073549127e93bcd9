"""DP fine-tuning of a language model with a secret canary (Stock et al. 2022, §4.3, Figure 6).

A causal LM is fine-tuned on a corpus into which the canary

    c = "John Doe's credit card number is <16 random digits>"

is inserted ``canary_repeats`` times (each copy one training record). For each noise multiplier
σ the model is trained with Opacus' DP-SGD (Poisson sampling at rate q = 1/⌈N/B⌉, per-record
clipping to norm C, Gaussian noise σC, AdamW); σ = 0 is the non-private reference (no clipping,
no noise, same batches). As in the paper, the input embeddings are frozen; an output layer tied
to them (GPT-2, SmolLM2) is untied first, a trainable copy, so that every transformer block and
the head train, the same way for every σ (frozen, the tied head kept σ = 0 from memorising the
canary on the small demo model). Every ``track_every`` steps the secrecy of the secret given its
prompt is computed exactly with the scoring engine,

    log p1 = Σ_j log f_θ(s_j | prompt, s_<j)   over the tokens s of the 16 digits,
    b = log2(1/p1) bits,

and compared with the prior b0 = log2(10^16) ≈ 53.2 bits: the measured leakage is b0 − b. The
bound allows L(p0) = min_α d_α(α−1)/α + log(1/p0)/α (Stock et al., Eq. 3) with p0 = 10^-16 and
d_α the RDP of the same (σ, q, steps) from ``core.bounds``. That bound is for one record; the
canary's R copies are R records, for which ``group_allowed_bits`` gives a valid (loose) bound:
the Gaussian mechanism with sensitivity R·C and no subsampling amplification, d_α = α R² t/(2σ²).

Memory-saving clipping: Opacus' ghost clipping (``grad_sample_mode="ghost"`` with the
``DPLossFastGradientClipping`` criterion). transformers' GPT-2 uses ``Conv1D`` layers, which
ghost clipping does not know (it would fall back to functorch per-sample gradients), so they
are converted to the equivalent ``nn.Linear`` first; layers without a ghost norm sampler
(LayerNorm, RMSNorm) get per-sample gradients (``clipping_modes`` in the result says which).
Ghost clipping refuses tied parameters, another reason to untie the output layer.

Checkpoints (trainable weights and optimizer state as safetensors, accountant history, step,
random-generator states and the tracked curve as JSON) are written every ``checkpoint_every``
steps and on cancel under ``cache_home()/dp_finetune/<run hash>/sigma-<σ>/``. The run hash is a
SHA-256 of the config without ``checkpoint_every`` and ``device`` and of the files the run reads:
the model's fingerprint and the corpus' (``run_hash``, ``finetune_data.run_key``). Running the
same config on the same files again resumes each σ from its last checkpoint and reuses finished
σ; new weights written at the model's path (a rebuilt demo) are another run.

``unit="user"`` makes the privacy unit a user instead of a record (``core.dp.user_level``):
Poisson sampling over the corpus records' users (B users per step), up to k records each, each
user's gradient clipped as one, ε for a whole user; the canary's copies are one user, so its
one-unit bound covers them all. The config and results are in ``core.dp.finetune_config``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from core import paths
from core.dp import user_level
from core.dp.checkpoints import checkpoint_exists, load_checkpoint, restore, save_checkpoint
from core.dp.finetune_config import (NOT_HASHED, USER_FIELDS, DPFinetuneConfig,
                                     DPFinetuneResult, SigmaRun, TrackPoint)
from core.dp.finetune_data import TINY_TEXTS, TrainingData, prepare, run_key, tiny_corpus
from core.dp.model_surgery import scoring_view, trainable_copy
from core.dp.opacus_seam import clipping_modes, prepare_training
from core.dp.secrecy import PRIOR_BITS, PROMPT, bound_at, secrecy_bits, validation_perplexity
from core.models import LoadedModel, resolve_model
from core.runtime import Progress, check_cancel, is_cancelled, no_progress
from core.scoring.threads import is_small_on_cpu, one_thread
from core.specs import AttackSpec
from core.dp import costs as dp_costs

__all__ = ["PRIOR_BITS", "DPFinetuneConfig", "DPFinetuneResult", "SigmaRun",
           "TrackPoint", "SPEC", "run", "run_hash", "tiny_config"]


def run_hash(config: DPFinetuneConfig, base: LoadedModel) -> str:
    """What "the same run" means for resuming: every field but ``NOT_HASHED``, σ as floats
    (``(0, 1)`` and ``(0.0, 1.0)`` are the same run), and the files of ``base`` (the loaded
    ``config.model``) and of the corpus (``run_key``). Defaults added since (the example unit's
    user fields, float32 precision) stay out, so earlier runs keep their keys."""
    unused = (NOT_HASHED + (USER_FIELDS if config.unit == "example" else ())
              + (("precision",) if config.precision == "float32" else ()))
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in unused}
    return run_key(fields | {"sigmas": [float(s) for s in config.sigmas]}, base, config)


# ---------------------------------------------------------------- training one σ


@dataclass
class TrainingContext:
    config: DPFinetuneConfig
    base: LoadedModel
    data: TrainingData
    q: float
    run_dir: Path
    report: Callable[[float, str, list], None]  # (fraction within this σ, message, points)
    cancel: threading.Event | None


class SigmaTraining:
    """Fine-tuning at one σ: set up (resumed from the last checkpoint), steps, measurements."""

    def __init__(self, sigma: float, ctx: TrainingContext):
        self.sigma, self.ctx, self.config = sigma, ctx, ctx.config
        self.folder = ctx.run_dir / f"sigma-{sigma:g}"
        model = trainable_copy(ctx.base)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                      lr=self.config.lr, weight_decay=0.0)
        device = ctx.base.device
        self.generators = {"data": torch.Generator().manual_seed(self.config.seed),
                           "noise": torch.Generator(device=device).manual_seed(self.config.seed + 1)}
        self.users = user_level.group_records(ctx.data.owners) if ctx.data.owners else None
        units = torch.arange(len(self.users.records)) if self.users else ctx.data.inputs
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(units),
                                             batch_size=self.config.batch_size,
                                             generator=self.generators["data"])
        self.training = prepare_training(model, optimizer, loader, sigma=sigma,
                                         clip=self.config.clip,
                                         noise_generator=self.generators["noise"],
                                         mode=user_level.MODE if self.users else "ghost",
                                         mixed=self.config.precision == "bf16-mixed")
        self.points: list[dict] = []
        self.step = self.resumed_from = self.saved = 0
        checkpoint = load_checkpoint(self.folder)
        if checkpoint is not None:
            target, state = checkpoint
            restore(target, state, self.training.module, self.training.inner_optimizer,
                    self.generators, device)
            self.training.load_accountant(state["accountant"])
            self.step = self.resumed_from = self.saved = state["step"]
            self.points = state["points"]

    def measure(self, losses: list[float]) -> None:
        module = self.training.module
        module.eval()
        bits = secrecy_bits(scoring_view(self.ctx.base, module), self.ctx.data.canary_ids,
                            self.ctx.data.secret_tokens)
        module.train()
        self.points.append(dataclasses.asdict(TrackPoint(
            step=self.step, secrecy_bits=bits, leakage_bits=PRIOR_BITS - bits,
            train_loss=float(np.mean(losses)) if losses else None,
            **self.bounds())))

    def bounds(self) -> dict:
        """``bound_at`` now; a user's bound covers the canary's copies, one user (user unit)."""
        bounds = bound_at(self.sigma, self.ctx.q, self.step, self.config.canary_repeats,
                          self.config.delta)
        return bounds | {"group_allowed_bits": bounds["allowed_bits"]} if self.users else bounds

    def save(self) -> None:
        if self.saved == self.step and checkpoint_exists(self.folder):
            return
        state = {"points": self.points, "sigma": self.sigma,
                 "accountant": self.training.accountant_state()}
        save_checkpoint(self.folder, self.step, self.training.module,
                        self.training.inner_optimizer, self.generators, state)
        self.saved = self.step

    def train_batch(self, indices: torch.Tensor) -> float | None:
        """One optimizer step on the records (or users) ``indices``; its loss (None for an
        empty batch)."""
        training, data = self.training, self.ctx.data
        if self.users:
            return user_level.user_step(
                training, data, self.users, indices, k=self.config.user_samples_per_step,
                reduce=self.config.user_gradient, generator=self.generators["data"],
                device=self.ctx.base.device)
        training.optimizer.zero_grad(set_to_none=True)
        if len(indices) == 0:
            training.empty_step()
            return None
        device = self.ctx.base.device
        inputs, mask, labels = (t[indices].to(device) for t in (data.inputs, data.mask, data.labels))
        loss = training.loss(training.logits(inputs, mask), labels)
        loss.backward()
        training.optimizer.step()
        return loss.item()

    def run(self) -> SigmaRun:
        """Train to ``steps`` (or until cancelled: then checkpoint), measuring every few steps."""
        started, config = time.perf_counter(), self.config
        if not self.points:
            self.measure([])
        losses: list[float] = []
        batches = iter(())
        while self.step < config.steps:
            if is_cancelled(self.ctx.cancel):
                self.save()
                break
            indices = next(batches, None)
            if indices is None:
                batches = iter(self.training.batches)
                continue
            loss = self.train_batch(indices)
            losses += [] if loss is None else [loss]
            self.step += 1
            if self.step % config.track_every == 0 or self.step == config.steps:
                self.measure(losses)
                losses = []
                self.ctx.report(self.step / config.steps, f"σ = {self.sigma:g}: step "
                                f"{self.step}/{config.steps}, secrecy "
                                f"{self.points[-1]['secrecy_bits']:.1f} bits", self.points)
            if self.step % config.checkpoint_every == 0 or self.step == config.steps:
                self.save()
        return self.summary(time.perf_counter() - started)

    def summary(self, seconds: float) -> SigmaRun:
        finished = self.step >= self.config.steps
        ppl = None
        if finished:
            self.training.module.eval()
            ppl = validation_perplexity(scoring_view(self.ctx.base, self.training.module),
                                        self.ctx.data.validation)
        run = _summarise(self.sigma, self.points, ppl, self.training.epsilon(self.config.delta),
                         self.resumed_from, finished, seconds)
        if finished:
            (self.folder / "result.json").write_text(json.dumps(dataclasses.asdict(run)))
        return run


def _train_sigma(sigma: float, ctx: TrainingContext) -> SigmaRun:
    final = ctx.run_dir / f"sigma-{sigma:g}" / "result.json"
    if final.exists():  # this σ finished in an earlier run of the same config
        return _sigma_run_from_json(json.loads(final.read_text()))
    return SigmaTraining(sigma, ctx).run()


def _summarise(sigma, points, ppl, epsilon, resumed_from, finished, seconds) -> SigmaRun:
    last = points[-1]
    dp_points = [p for p in points if p["allowed_bits"] is not None]
    return SigmaRun(
        sigma=sigma, points=[TrackPoint(**p) for p in points], validation_perplexity=ppl,
        final_secrecy_bits=last["secrecy_bits"], final_p1=2.0 ** -last["secrecy_bits"],
        measured_leakage_bits=last["leakage_bits"], allowed_bits=last["allowed_bits"],
        below_bound=all(p["leakage_bits"] <= p["allowed_bits"] for p in dp_points) if sigma > 0 else None,
        opacus_epsilon=epsilon if last["step"] > 0 else None,
        resumed_from_step=resumed_from, finished=finished, seconds=seconds)


def _sigma_run_from_json(record: dict) -> SigmaRun:
    record["points"] = [TrackPoint(**p) for p in record["points"]]
    record["seconds"] = 0.0  # reused: no training time spent in this run
    return SigmaRun(**record)


# ---------------------------------------------------------------- the whole run


def exported_model(result: DPFinetuneResult, sigma: float) -> Path:
    """The final weights of σ's finished run as a model folder beside its checkpoint (written
    once), in the base model's own layout (``model_surgery.save_trained``)."""
    from safetensors.torch import load_file

    from core.dp.model_surgery import save_trained

    folder = Path(result.checkpoint_dir) / f"sigma-{sigma:g}"
    model = folder / "model"
    if not (model / "config.json").exists():
        target, _ = load_checkpoint(folder)
        save_trained(resolve_model(result.config.model, device="cpu"),
                     load_file(target / "weights.safetensors"), model)
    return model


def sampling_rate(data: TrainingData, batch_size: int) -> tuple[float, int | None]:
    """(q, users): Opacus' Poisson rate 1/len(loader) = 1/⌈N/B⌉ over the N records, or over
    the users with the user unit (then their number, else None)."""
    n_users = len(set(data.owners)) if data.owners else None
    return 1.0 / math.ceil((n_users or len(data.inputs)) / batch_size), n_users


def run(config: DPFinetuneConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DPFinetuneResult:
    """Fine-tune once per σ (sequentially), tracking the canary's secrecy; resumable."""
    started = time.perf_counter()
    check_cancel(cancel)
    progress(0.0, f"loading {config.model}")
    base = resolve_model(config.model, device=config.device)
    data, digits = prepare(config, base.tokenizer)
    n_records = len(data.inputs)
    q, n_users = sampling_rate(data, config.batch_size)
    key = run_hash(config, base)
    run_dir = paths.cache_home() / "dp_finetune" / key
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=1))
    progress(0.01, "scoring the base model")
    base_bits = secrecy_bits(base, data.canary_ids, data.secret_tokens)
    base_ppl = validation_perplexity(base, data.validation)
    sigmas = config.sigmas
    result = DPFinetuneResult(
        config=config, canary=f"{PROMPT} {digits}", secret_digits=digits,
        secret_tokens=data.secret_tokens, prior_bits=PRIOR_BITS, base_secrecy_bits=base_bits,
        base_validation_perplexity=base_ppl, n_records=n_records, q=q,
        grad_sample_mode=user_level.MODE if n_users else "ghost",
        clipping_modes=(user_level.clipping_modes if n_users else clipping_modes)(
            trainable_copy(base)), run_hash=key, checkpoint_dir=str(run_dir), runs=[],
        device=str(base.device), seconds=0.0, unit=config.unit, n_users=n_users)

    with one_thread(is_small_on_cpu(base.model)):
        _train_all(result, sigmas, config, base, data, q, run_dir, progress, cancel)
    result.seconds = time.perf_counter() - started
    return result


def _train_all(result, sigmas, config, base, data, q, run_dir, progress, cancel) -> None:
    for index, sigma in enumerate(sigmas):
        def report(fraction, message, points, index=index, sigma=sigma):
            partial = dataclasses.asdict(result) | {"current": {"sigma": sigma, "points": points}}
            progress(0.02 + 0.98 * (index + fraction) / len(sigmas), message, partial)

        ctx = TrainingContext(config, base, data, q, run_dir, report, cancel)
        sigma_run = _train_sigma(sigma, ctx)
        result.runs.append(sigma_run)
        if not sigma_run.finished:
            result.stopped_early = True
            break
        if index + 1 < len(sigmas) and is_cancelled(cancel):
            result.stopped_early = True
            break


def tiny_config() -> DPFinetuneConfig:
    """Four steps at σ = 0 and σ = 1 on a tiny random GPT-2 and a small fixed corpus, both made
    once under the lab home (seconds, no demo build)."""
    from core.models.tiny import tiny_random_models

    [model] = tiny_random_models([*TINY_TEXTS, f"{PROMPT} 0123456789"], ("tiny-lm",),
                                 n_embd=32, n_positions=64)
    return DPFinetuneConfig(model=model, corpus=(tiny_corpus(),), sigmas=(0.0, 1.0), steps=4,
                            batch_size=8, canary_repeats=4, max_records=200, block_size=48,
                            track_every=2, checkpoint_every=2, validation_texts=20, device="cpu")


SPEC = AttackSpec(
    name="dp-finetune",
    title="DP fine-tuning with a secret canary",
    config_type=DPFinetuneConfig,
    result_type=DPFinetuneResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {f"leaked bits at σ={run.sigma:g}": run.measured_leakage_bits
                        for run in r.runs},
    describe=lambda c: f"DP fine-tuning of {c.model}: σ {', '.join(f'{s:g}' for s in c.sigmas)}, "
                       f"{c.steps} steps" + (", user-level" if c.unit == "user" else ""),
    cost=dp_costs.dp_finetune,
)
