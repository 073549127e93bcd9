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
steps and on cancel under ``home()/dp_finetune/<run hash>/sigma-<σ>/``. The run hash is a
SHA-256 of the config without ``checkpoint_every`` and ``device`` (see ``run_hash``); running
the same config again resumes each σ from its last checkpoint and reuses finished σ. The model
is identified by its source string, so changing a folder's contents in place is not noticed.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import random
import shutil
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers.pytorch_utils import Conv1D

from core import paths
from core.runtime import Progress, check_cancel, is_cancelled, no_progress
from core.data import read_texts
from core.specs import AttackSpec, check_params, param
from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle, reconstruction_leakage
from core.errors import UserError
from core.models import LoadedModel, resolve_model
from core.models.tiny import disable_dropout
from core.scoring import score_texts, score_token_ids

# Opacus' notes that do not apply here: we seed the noise on purpose (resumable, reproducible
# experiments, not a production release), and the frozen embeddings mean no input needs a gradient.
warnings.filterwarnings("ignore", message="Secure RNG turned off", category=UserWarning)
warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)

PROMPT = "John Doe's credit card number is"  # the canary's prompt (Stock et al. §4.3)
SECRET_DIGITS = 16
LOG_P0 = -SECRET_DIGITS * math.log(10.0)          # p0 = 10^-16: a uniformly random secret
PRIOR_BITS = SECRET_DIGITS * math.log2(10.0)       # ≈ 53.15 bits
LN2 = math.log(2.0)
MAX_SIGMAS = 10
SMALL_MODEL = 20_000_000  # parameters: below, train on one CPU thread (measured ~10x faster on
                          # the loaded 2-core box: tiny matrices gain nothing from threads)
NOT_HASHED = ("checkpoint_every", "device")        # they do not change the numbers


@dataclass(frozen=True)
class DPFinetuneConfig:
    model: str = param("", help="a model source or loaded name (folder, .zip, .gguf, smollm2, "
                                "a named source)")
    corpus: tuple[str, ...] = param((), label="corpus files", help="training texts: .txt, .json, "
                                    ".jsonl or .csv files (records holding the canary's prompt "
                                    "are left out)")
    validation: str = param("", label="validation file", help="held-out texts for the "
                            "validation perplexity (empty: a tenth of the corpus)")
    sigmas: tuple[float, ...] = param((0.0, 0.5, 1.0), ge=0.0, le=1000.0,
                                      label="noise multipliers σ", help="one fine-tuning per σ; "
                                      "0 is the non-private reference")
    steps: int = param(300, ge=1, le=1_000_000, help="optimizer steps per σ")
    batch_size: int = param(32, ge=1, le=4096, help="expected batch size B (Poisson sampling, "
                                                    "q = 1/⌈N/B⌉)")
    lr: float = param(3e-3, gt=0.0, le=1.0, label="learning rate", help="AdamW learning rate")
    clip: float = param(1.0, gt=0.0, le=1e6, label="clip C",
                        help="C, the per-record gradient norm bound")
    canary_repeats: int = param(200, ge=1, le=10_000, help="copies of the canary in the "
                                "training set (the paper: up to 280)")
    max_records: int = param(2000, ge=10, le=1_000_000, help="corpus records kept (drawn at "
                             "random), canary copies excluded")
    block_size: int = param(64, ge=8, le=4096, help="tokens per record (longer ones are cut)")
    track_every: int = param(25, ge=1, le=1_000_000, help="steps between two measurements of "
                             "the secrecy")
    checkpoint_every: int = param(50, ge=1, le=1_000_000, help="steps between two checkpoints")
    validation_texts: int = param(200, ge=1, le=100_000, help="held-out texts for the "
                                  "validation perplexity")
    delta: float = param(1e-5, gt=0.0, lt=1.0, label="δ", help="δ of the reported ε")
    seed: int = param(0, ge=0, le=2**31 - 1, help="canary digits, record choice, batches and "
                                                  "noise")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one")

    def __post_init__(self) -> None:
        check_params(self)
        if not self.model.strip():
            raise UserError("choose a model (a folder, a .zip, a .gguf, smollm2 or a named source)")
        if not 1 <= len(self.sigmas) <= MAX_SIGMAS:
            raise UserError(f"give 1 to {MAX_SIGMAS} noise multipliers σ, e.g. 0,0.5,1")
        if len(set(self.sigmas)) != len(self.sigmas):
            raise UserError(f"the noise multipliers σ must not repeat, got {self.sigmas}")


def run_hash(config: DPFinetuneConfig) -> str:
    """What "the same config" means for resuming: SHA-256 of every field but ``NOT_HASHED``,
    σ as floats (``(0, 1)`` and ``(0.0, 1.0)`` are the same run)."""
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_HASHED}
    fields["sigmas"] = [float(s) for s in config.sigmas]
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class TrackPoint:
    step: int
    secrecy_bits: float           # b = log2(1/p1) of the 16 digits given the prompt
    leakage_bits: float           # prior bits − secrecy bits
    allowed_bits: float | None    # L(p0) of one record for (σ, q, step); None for σ = 0
    group_allowed_bits: float | None  # bound for the canary's R copies (capped at the prior)
    epsilon: float | None         # ε at δ (Balle et al. 2020) for (σ, q, step)
    train_loss: float | None      # mean training loss since the previous point


@dataclass
class SigmaRun:
    sigma: float
    points: list[TrackPoint]
    validation_perplexity: float | None
    final_secrecy_bits: float
    final_p1: float
    measured_leakage_bits: float
    allowed_bits: float | None
    below_bound: bool | None      # measured ≤ allowed at every tracked step (σ > 0)
    opacus_epsilon: float | None  # from Opacus' own RDP accountant (restored on resume)
    resumed_from_step: int        # 0: started afresh
    finished: bool
    seconds: float


@dataclass
class DPFinetuneResult:
    config: DPFinetuneConfig
    canary: str
    secret_digits: str
    secret_tokens: int
    prior_bits: float
    base_secrecy_bits: float
    base_validation_perplexity: float
    n_records: int                # training records, canary copies included
    q: float
    grad_sample_mode: str         # Opacus mode for σ > 0
    clipping_modes: dict[str, str]  # trainable layer type -> how its per-record norm is computed
    run_hash: str
    checkpoint_dir: str
    runs: list[SigmaRun]
    device: str
    seconds: float
    stopped_early: bool = False


# ---------------------------------------------------------------- data


@dataclass
class _Data:
    canary_ids: list[int]
    secret_tokens: int
    inputs: torch.Tensor          # (N, block) token ids, right-padded
    mask: torch.Tensor            # (N, block) attention mask, 0 on padding
    labels: torch.Tensor          # (N, block), -100 on padding (and on the leading EOS)
    validation: list[str]


def _corpus(config: DPFinetuneConfig, rng: random.Random) -> tuple[list[str], list[str]]:
    """(training texts, validation texts). Records holding the canary's prompt are left out:
    they would confound the secrecy measure (a corpus's own planted secret, for instance)."""
    if not config.corpus:
        raise UserError("give a corpus: one or more files of training texts")
    texts = [t for source in config.corpus for t in read_texts(source) if PROMPT not in t]
    if config.validation.strip():
        train, validation = texts, read_texts(config.validation)
    else:
        rng.shuffle(texts)
        cut = max(1, len(texts) // 10)
        train, validation = texts[cut:], texts[:cut]
    rng.shuffle(train)
    if len(train) < 10:
        raise UserError(f"the corpus has {len(train)} training records: at least 10 are needed")
    return train[: config.max_records], validation[: config.validation_texts]


def _prepare(config: DPFinetuneConfig, tokenizer) -> tuple[_Data, str]:
    rng = random.Random(config.seed)
    digits = "".join(rng.choice("0123456789") for _ in range(SECRET_DIGITS))
    train, validation = _corpus(config, rng)
    prompt_ids = tokenizer(PROMPT, add_special_tokens=False).input_ids
    secret_ids = tokenizer(" " + digits, add_special_tokens=False).input_ids
    canary_ids = prompt_ids + secret_ids
    if len(canary_ids) + 2 > config.block_size:
        raise UserError(f"the canary takes {len(canary_ids)} tokens: use a block size of at least "
                        f"{len(canary_ids) + 2}")
    eos = tokenizer.eos_token_id
    if eos is None:
        raise UserError("the model's tokenizer has no end-of-text token to separate records")
    records = [ids for ids in tokenizer(train, add_special_tokens=False).input_ids if ids]
    records += [canary_ids] * config.canary_repeats
    inputs = torch.full((len(records), config.block_size), eos, dtype=torch.long)
    mask = torch.zeros_like(inputs)
    labels = torch.full_like(inputs, -100)
    for row, ids in enumerate(records):
        ids = [eos, *ids, eos][: config.block_size]  # EOS as context, as the scoring engine does
        inputs[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
        labels[row, 1: len(ids)] = torch.tensor(ids[1:])
    data = _Data(canary_ids, len(secret_ids), inputs, mask, labels, validation)
    return data, digits


# ---------------------------------------------------------------- model surgery and measurements


def conv1d_to_linear(model: torch.nn.Module) -> torch.nn.Module:
    """Replace transformers' ``Conv1D`` (y = x W + b, W of shape in×out) by the same ``nn.Linear``."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, Conv1D):
                linear = torch.nn.Linear(*child.weight.shape, device=child.weight.device,
                                         dtype=child.weight.dtype)
                with torch.no_grad():
                    linear.weight.copy_(child.weight.T)
                    linear.bias.copy_(child.bias)
                setattr(module, name, linear)
    return model


def _trainable_copy(base: LoadedModel) -> torch.nn.Module:
    """A float32 copy of the model with Conv1D as Linear, no dropout, frozen input embeddings and
    an output layer of its own (a trainable copy when it was tied to the input embeddings)."""
    model = conv1d_to_linear(disable_dropout(copy.deepcopy(base.model).float()))
    output = model.get_output_embeddings()
    if output is not None and output.weight is model.get_input_embeddings().weight:
        # untie: ghost clipping refuses shared parameters; the head gets its own trainable copy
        output.weight = torch.nn.Parameter(output.weight.detach().clone())
        model.config.tie_word_embeddings = False
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding):
            module.weight.requires_grad_(False)
    if not any(p.requires_grad for p in model.parameters()):
        raise UserError("the model has nothing to train once its embeddings are frozen")
    return model.train()


def clipping_modes(model: torch.nn.Module) -> dict[str, str]:
    """How Opacus' ghost mode gets each trainable layer type's per-record gradient norm."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping as Ghost

    modes = {}
    for module in model.modules():
        if any(p.requires_grad for p in module.parameters(recurse=False)):
            kind = type(module)
            modes[kind.__name__] = ("ghost (norm without per-sample gradients)" if kind in Ghost.NORM_SAMPLERS
                                    else "per-sample gradients (hooks)" if kind in Ghost.GRAD_SAMPLERS
                                    else "per-sample gradients (functorch)")
    return modes


def _scoring_view(base: LoadedModel, model: torch.nn.Module) -> LoadedModel:
    """The model being trained, as a fresh ``LoadedModel`` (a new key: no stale cached scores)."""
    return LoadedModel(base.name + "+dp-finetune", base.source, model, base.tokenizer,
                       base.device, base.card)


def secrecy_bits(lm: LoadedModel, canary_ids: list[int], secret_tokens: int) -> float:
    """b = −log2 p(secret | prompt): the last ``secret_tokens`` scores of prompt + secret."""
    scores = score_token_ids(lm, [canary_ids])[0]
    return -float(scores.logprobs[-secret_tokens:].sum(dtype=np.float64)) / LN2


def validation_perplexity(lm: LoadedModel, texts: list[str]) -> float:
    """exp(−mean log-prob) over every token of the held-out texts."""
    scores = score_texts(lm, texts)
    total = sum(s.total_logprob for s in scores)
    return math.exp(-total / max(1, sum(s.n_scored for s in scores)))


def bound_at(sigma: float, q: float, step: int, repeats: int, delta: float) -> dict:
    """Allowed leakage (bits) of one record and of the canary's copies, and ε, after ``step``."""
    if sigma == 0:
        return {"allowed_bits": None, "group_allowed_bits": None, "epsilon": None}
    if step == 0:
        return {"allowed_bits": 0.0, "group_allowed_bits": 0.0, "epsilon": 0.0}
    rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=step, orders=DEFAULT_ORDERS)
    group = compute_rdp(q=1.0, noise_multiplier=sigma / repeats, steps=step, orders=DEFAULT_ORDERS)
    return {
        "allowed_bits": min(reconstruction_leakage(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=LOG_P0).bits, PRIOR_BITS),
        "group_allowed_bits": min(reconstruction_leakage(orders=DEFAULT_ORDERS, rdp=group, log_p0=LOG_P0).bits,
                                  PRIOR_BITS),
        "epsilon": epsilon_balle(orders=DEFAULT_ORDERS, rdp=rdp, delta=delta)[0],
    }


# ---------------------------------------------------------------- checkpoints


def _save_checkpoint(folder: Path, step: int, model, optimizer, generators: dict, state: dict) -> None:
    """``folder/step-N/`` (weights, optimizer tensors, JSON state), then ``latest.json`` -> it."""
    target = folder / f"step-{step:07d}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    save_file({n: p.detach().contiguous().cpu() for n, p in model.named_parameters() if p.requires_grad},
              target / "weights.safetensors")
    opt = optimizer.state_dict()
    tensors = {f"state.{i}.{k}": v.detach().cpu() for i, s in opt["state"].items() for k, v in s.items()}
    tensors |= {f"rng.{name}": g.get_state() for name, g in generators.items()}
    save_file(tensors, target / "optimizer.safetensors")
    (target / "state.json").write_text(json.dumps(state | {"step": step, "param_groups": opt["param_groups"]}))
    pointer = folder / "latest.json.tmp"
    pointer.write_text(json.dumps({"checkpoint": target.name}))
    pointer.replace(folder / "latest.json")
    for old in folder.glob("step-*"):
        if old != target:
            shutil.rmtree(old, ignore_errors=True)


def checkpoint_exists(folder: Path) -> bool:
    return (folder / "latest.json").exists()


def _load_checkpoint(folder: Path) -> tuple[Path, dict] | None:
    try:
        target = folder / json.loads((folder / "latest.json").read_text())["checkpoint"]
        return target, json.loads((target / "state.json").read_text())
    except (OSError, ValueError, KeyError):
        return None


def _restore(target: Path, state: dict, model, optimizer, generators: dict, device) -> None:
    weights = load_file(target / "weights.safetensors", device=str(device))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)
    tensors = load_file(target / "optimizer.safetensors")
    opt_state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("state."):
            _, index, name = key.split(".", 2)
            opt_state.setdefault(int(index), {})[name] = value
    optimizer.load_state_dict({"state": opt_state, "param_groups": state["param_groups"]})
    for name, g in generators.items():
        g.set_state(tensors[f"rng.{name}"])


# ---------------------------------------------------------------- training one σ


def _sequence_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss of each record (padding ignored)."""
    per_token = torch.nn.functional.cross_entropy(
        logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), reduction="none").view(labels.shape[0], -1)
    return per_token.sum(1) / (labels[:, 1:] != -100).sum(1).clamp(min=1)


@dataclass
class _Context:
    config: DPFinetuneConfig
    base: LoadedModel
    data: _Data
    q: float
    run_dir: Path
    report: Callable[[float, str, list], None]  # (fraction within this σ, message, points)
    cancel: threading.Event | None


def _train_sigma(sigma: float, ctx: _Context) -> SigmaRun:
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader

    config, data, device = ctx.config, ctx.data, ctx.base.device
    started = time.perf_counter()
    folder = ctx.run_dir / f"sigma-{sigma:g}"
    final = folder / "result.json"
    if final.exists():  # this σ finished in an earlier run of the same config
        return _sigma_run_from_json(json.loads(final.read_text()))

    model = _trainable_copy(ctx.base)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                                  weight_decay=0.0)
    generators = {"data": torch.Generator().manual_seed(config.seed),
                  "noise": torch.Generator(device=device).manual_seed(config.seed + 1)}
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data.inputs),
                                         batch_size=config.batch_size, generator=generators["data"])
    engine = None
    if sigma > 0:
        engine = PrivacyEngine(accountant="rdp")
        model, optimizer, criterion, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader,
            criterion=torch.nn.CrossEntropyLoss(ignore_index=-100, reduction="mean"),
            noise_multiplier=sigma, max_grad_norm=config.clip, grad_sample_mode="ghost",
            noise_generator=generators["noise"], poisson_sampling=True)
    else:
        loader = DPDataLoader.from_data_loader(loader)  # the same Poisson batches, no privacy
    raw = model._module if engine else model
    sampler = loader.batch_sampler  # one torch.rand per batch: resumes exactly from the generator

    points: list[dict] = []
    step = resumed_from = saved = 0
    checkpoint = _load_checkpoint(folder)
    if checkpoint is not None:
        target, state = checkpoint
        _restore(target, state, raw, optimizer.original_optimizer if engine else optimizer, generators, device)
        if engine:
            engine.accountant.load_state_dict(state["accountant"])
        step = resumed_from = saved = state["step"]
        points = state["points"]

    def measure(losses: list[float]) -> None:
        raw.eval()
        bits = secrecy_bits(_scoring_view(ctx.base, raw), data.canary_ids, data.secret_tokens)
        raw.train()
        points.append(dataclasses.asdict(TrackPoint(
            step=step, secrecy_bits=bits, leakage_bits=PRIOR_BITS - bits,
            train_loss=float(np.mean(losses)) if losses else None,
            **bound_at(sigma, ctx.q, step, config.canary_repeats, config.delta))))

    def save() -> None:
        nonlocal saved
        if saved == step and checkpoint_exists(folder):
            return
        state = {"points": points, "sigma": sigma,
                 "accountant": engine.accountant.state_dict() if engine else None}
        _save_checkpoint(folder, step, raw, optimizer.original_optimizer if engine else optimizer,
                         generators, state)
        saved = step

    if not points:
        measure([])
    losses: list[float] = []
    batches = iter(())
    while step < config.steps:
        if is_cancelled(ctx.cancel):
            save()
            break
        indices = next(batches, None)
        if indices is None:
            batches = iter(sampler)
            continue
        optimizer.zero_grad(set_to_none=True)
        if len(indices) == 0:  # an empty Poisson batch: a DP step is then noise only
            if engine:
                for p in optimizer.params:
                    p.grad = torch.zeros_like(p)
                optimizer.step()
        else:
            inputs, mask, labels = (t[indices].to(device) for t in (data.inputs, data.mask, data.labels))
            logits = model(input_ids=inputs, attention_mask=mask, use_cache=False).logits
            if engine:
                loss = criterion(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                                 shape=logits[:, :-1].shape)
            else:
                loss = _sequence_losses(logits, labels).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        step += 1
        if step % config.track_every == 0 or step == config.steps:
            measure(losses)
            losses = []
            ctx.report(step / config.steps, f"σ = {sigma:g}: step {step}/{config.steps}, "
                       f"secrecy {points[-1]['secrecy_bits']:.1f} bits", points)
        if step % config.checkpoint_every == 0 or step == config.steps:
            save()

    finished = step >= config.steps
    ppl = None
    if finished:
        raw.eval()
        ppl = validation_perplexity(_scoring_view(ctx.base, raw), data.validation)
    run = _summarise(sigma, points, ppl, engine, config.delta, resumed_from, finished,
                     time.perf_counter() - started)
    if finished:
        final.write_text(json.dumps(dataclasses.asdict(run)))
    return run


def _summarise(sigma, points, ppl, engine, delta, resumed_from, finished, seconds) -> SigmaRun:
    last = points[-1]
    dp_points = [p for p in points if p["allowed_bits"] is not None]
    return SigmaRun(
        sigma=sigma, points=[TrackPoint(**p) for p in points], validation_perplexity=ppl,
        final_secrecy_bits=last["secrecy_bits"], final_p1=2.0 ** -last["secrecy_bits"],
        measured_leakage_bits=last["leakage_bits"], allowed_bits=last["allowed_bits"],
        below_bound=all(p["leakage_bits"] <= p["allowed_bits"] for p in dp_points) if sigma > 0 else None,
        opacus_epsilon=engine.accountant.get_epsilon(delta) if engine and last["step"] > 0 else None,
        resumed_from_step=resumed_from, finished=finished, seconds=seconds)


def _sigma_run_from_json(record: dict) -> SigmaRun:
    record["points"] = [TrackPoint(**p) for p in record["points"]]
    record["seconds"] = 0.0  # reused: no training time spent in this run
    return SigmaRun(**record)


# ---------------------------------------------------------------- the whole run


def run(config: DPFinetuneConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DPFinetuneResult:
    """Fine-tune once per σ (sequentially), tracking the canary's secrecy; resumable."""
    started = time.perf_counter()
    check_cancel(cancel)
    progress(0.0, f"loading {config.model}")
    base = resolve_model(config.model, device=config.device)
    data, digits = _prepare(config, base.tokenizer)
    n_records = len(data.inputs)
    q = 1.0 / math.ceil(n_records / config.batch_size)  # Opacus' sample rate 1/len(loader)
    run_dir = paths.home() / "dp_finetune" / run_hash(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=1))
    progress(0.01, "scoring the base model")
    base_bits = secrecy_bits(base, data.canary_ids, data.secret_tokens)
    base_ppl = validation_perplexity(base, data.validation)
    sigmas = config.sigmas
    result = DPFinetuneResult(
        config=config, canary=f"{PROMPT} {digits}", secret_digits=digits,
        secret_tokens=data.secret_tokens, prior_bits=PRIOR_BITS, base_secrecy_bits=base_bits,
        base_validation_perplexity=base_ppl, n_records=n_records, q=q, grad_sample_mode="ghost",
        clipping_modes=clipping_modes(_trainable_copy(base)), run_hash=run_hash(config),
        checkpoint_dir=str(run_dir), runs=[], device=str(base.device), seconds=0.0)

    threads = torch.get_num_threads()
    if base.device.type == "cpu" and base.model.num_parameters() < SMALL_MODEL:
        torch.set_num_threads(1)
    try:
        _train_all(result, sigmas, config, base, data, q, run_dir, progress, cancel)
    finally:
        torch.set_num_threads(threads)
    result.seconds = time.perf_counter() - started
    return result


def _train_all(result, sigmas, config, base, data, q, run_dir, progress, cancel) -> None:
    for index, sigma in enumerate(sigmas):
        def report(fraction, message, points, index=index, sigma=sigma):
            partial = dataclasses.asdict(result) | {"current": {"sigma": sigma, "points": points}}
            progress(0.02 + 0.98 * (index + fraction) / len(sigmas), message, partial)

        ctx = _Context(config, base, data, q, run_dir, report, cancel)
        sigma_run = _train_sigma(sigma, ctx)
        result.runs.append(sigma_run)
        if not sigma_run.finished:
            result.stopped_early = True
            break
        if index + 1 < len(sigmas) and is_cancelled(cancel):
            result.stopped_early = True
            break


TINY_TEXTS = tuple(f"{who} {verb} the {what} at {when}." for who in (
    "The king", "A fool", "My lady", "The guard", "Old Tom") for verb in (
    "praised", "lost", "found", "sold") for what in ("crown", "letter", "horse") for when in (
    "dawn", "noon", "night"))


def tiny_model_and_corpus() -> tuple[str, str]:
    """A random one-layer GPT-2 folder and a small corpus file (made once, under the lab home),
    so that the tiny config needs no demo build."""
    from core.models.tiny import tiny_random_models

    [model] = tiny_random_models(list(TINY_TEXTS) + [f"{PROMPT} 0123456789"], ("tiny-lm",),
                                 n_embd=32, n_positions=64)
    corpus = Path(model).parent / "corpus.txt"
    corpus.write_text("\n".join(TINY_TEXTS), encoding="utf-8")
    return model, str(corpus)


def tiny_config() -> DPFinetuneConfig:
    """Four steps at σ = 0 and σ = 1 on a tiny random GPT-2 (seconds)."""
    model, corpus = tiny_model_and_corpus()
    return DPFinetuneConfig(model=model, corpus=(corpus,), sigmas=(0.0, 1.0), steps=4,
                            batch_size=8, canary_repeats=4, max_records=200, block_size=48,
                            track_every=2, checkpoint_every=2, validation_texts=20, device="cpu")


SPEC = AttackSpec(
    name="dp-finetune",
    title="DP fine-tuning with a secret canary",
    kind="privacy",
    config_type=DPFinetuneConfig,
    result_type=DPFinetuneResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {f"leaked bits at σ={run.sigma:g}": run.measured_leakage_bits
                        for run in r.runs},
    describe=lambda c: f"DP fine-tuning of {c.model}: σ {', '.join(f'{s:g}' for s in c.sigmas)}, "
                       f"{c.steps} steps",
)
