"""Audit a DP fine-tuning run with canaries: an ε lower bound beside the accountant's ε.

m random canaries "My canary words are <k random words>" (distinct; k = 6 by default) are
drawn, and each is put into the fine-tuning corpus (``repeats`` copies, each one record) when
its own fair coin says so; the coins are seeded and recorded. The words are tokens drawn
uniformly from the V tokens of the model's vocabulary that are a space and a lowercase word,
and that the tokenizer reads back as themselves (``word_tokens``): the canary's prior is V^-k.
That is the default ``kind``; Panda et al.'s (ICLR 2025) stronger kinds, new tokens,
least-likely tokens and corpus-unseen bigrams, are in ``core.dp.canary_kinds``.
The model is fine-tuned once, on the corpus and the included canaries, through the DP
fine-tuning path of ``core.dp.finetune`` (Opacus DP-SGD with ghost clipping and Poisson
sampling at q = 1/⌈N/B⌉; σ = 0: the same batches without clipping or noise). Every canary,
included or not, is then scored with the scoring engine:

    loss:   s = log p_trained(words | prefix)
    ratio:  s = log p_trained(words | prefix) − log p_start(words | prefix)   (default)

The ratio removes what the starting model already prefers (the reference model of Carlini et
al. 2021). The scores and the coins go to ``core.dp.audit.audit_scores`` with the one-run bound
of Steinke, Nasr & Jagielski (2023), the only one of the auditor's bounds proven for canaries of
one training run; the accountant's ε of the same run is set beside it. One canary is
``repeats`` records, so for r > 1 that ε is the group bound of the Gaussian mechanism with
sensitivity r·C and no subsampling amplification (d_α = α r² T/(2σ²), as
``core.dp.secrecy.bound_at``): valid, and loose.

Why random word tokens rather than random digits: with ten symbols after one shared prefix, the
first log10(m/2) digits of the included canaries are spread evenly, and the model must learn
long digit contexts to tell a canary apart; on the demo (m = 1,000, 300 steps at σ = 0, each
included canary seen ~19 times) 8-digit canaries reached AUROC 0.54 and ε̂ = 0, 6-word canaries
AUROC 0.9997 and ε̂ = 4.38 (the one-run bound alone at 95%): a word of hundreds is nearly a key
of its own, and each next word is one association to learn. Words that read back as themselves
keep the canary a text that the tokenizer makes the same tokens of, and common words have
trained embeddings (the input embeddings are frozen in this fine-tuning). Training resumes from its checkpoints under
``cache_home()/dp_canary_audit/<run hash>`` (as ``dp-finetune``'s do: the hash holds the model's and
the corpus' fingerprints), and a finished run of the same config on the same files is only
scored again.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from core import paths
from core.bounds import training_run
from core.bounds.last_iterate import last_iterate_epsilon
from core.dp import training_params
from core.dp.audit import (DpAuditResult, accountant_epsilon, audit_scores,
                           check_canaries, delta_param)
from core.dp.audit_methods import ONE_RUN_METHODS
from core.dp.canary_kinds import (CANARY_PREFIX, MAX_NEW_TOKENS, UNHASHED, Canaries, Kind,
                                  corpus_records, plant)
from core.dp.finetune import NOT_HASHED, DPFinetuneConfig, SigmaTraining, TrainingContext
from core.dp.finetune_data import TINY_TEXTS, TrainingData, pack_records, run_key, tiny_corpus
from core.dp.model_surgery import scoring_view
from core.errors import UserError
from core.models import LoadedModel, resolve_model
from core.scoring.threads import is_small_on_cpu, one_thread
from core.runtime import Cancelled, Progress, check_cancel, no_progress, share
from core.scoring import score_token_ids
from core.specs import AttackSpec, check_params, param
from core.dp import costs as dp_costs

NOT_TRAINING = ("score", "confidence")  # audit choices: a change re-scores, never retrains
REPORTS = 20              # progress reports (and tracked-canary measurements) while training


@dataclass(frozen=True)
class DpCanaryAuditConfig:
    model: str = param("", help="a model source or loaded name (folder, .zip, .gguf, smollm2, "
                                "a named source)", path="model")
    corpus: tuple[str, ...] = param((), label="corpus files", help="fine-tuning texts: .txt, "
                                    ".json, .jsonl or .csv files", path="data")
    validation: str = training_params.validation_param()
    canaries: int = param(1000, ge=10, le=100_000, help="m random canaries, each included in "
                          "training by a fair coin")
    words: int = param(6, ge=2, le=32, help="k, the tokens of each canary's secret (random "
                       "words: its prior is V^-k for V word tokens in the vocabulary)")
    kind: Kind = param("random_words", help="the secrets (Panda et al. 2025): random word "
                       "tokens; new tokens added to the vocabulary; tokens the starting model "
                       "finds least likely after the prefix; corpus tokens forming no corpus "
                       "bigram")
    least_likely_pool: int = param(500, ge=2, le=1_000_000, label="least-likely pool",
                                   help="least_likely: the N tokens of lowest probability after "
                                        "the prefix that the secrets are drawn from")
    repeats: int = param(1, ge=1, le=1000, help="copies of each included canary (r records: "
                         "the accountant's ε is then a group bound)")
    sigma: float = training_run.sigma_param(1.0, label="noise multiplier σ",
                                            help="DP-SGD's noise multiplier; 0: ordinary "
                                                 "training, audited too")
    steps: int = param(300, ge=1, le=1_000_000, help="optimizer steps")
    batch_size: int = training_params.batch_size_param(64)
    lr: float = training_params.lr_param()
    clip: float = training_params.clip_param()
    max_records: int = training_params.max_records_param(500, "canaries")
    block_size: int = training_params.block_size_param()
    score: Literal["ratio", "loss"] = param("ratio", help="ratio: log p_trained − log p_start "
                                            "of the canary's words; loss: log p_trained alone")
    delta: float = delta_param()
    confidence: float = param(0.95, ge=0.5, le=0.9999,
                              help="1 − β: the audited bound holds with at least this "
                                   "probability")
    seed: int = param(0, ge=0, le=2**31 - 1, help="canaries, coins, record choice, batches and "
                                                  "noise", page="advanced")
    checkpoint_every: int = param(100, ge=1, le=1_000_000, help="steps between two checkpoints",
                                  page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one",
                                                   page="advanced")
    precision: training_params.Precision = training_params.precision_param()

    def __post_init__(self) -> None:
        check_params(self)
        if not self.model.strip():
            raise UserError("choose a model (a folder, a .zip, a .gguf, smollm2 or a named source)")
        if not self.corpus:
            raise UserError("give a corpus: one or more files of training texts")
        if self.kind == "new_tokens" and self.canaries * self.words > MAX_NEW_TOKENS:
            raise UserError(f"new_tokens adds m·k = {self.canaries * self.words:,} tokens to the "
                            f"vocabulary: at most {MAX_NEW_TOKENS:,} (m up to "
                            f"{MAX_NEW_TOKENS // self.words:,} at k = {self.words}), so that the "
                            "grown embeddings and logits fit in memory")


@dataclass
class CanaryScore:
    """One canary: its secret (random words, or its kind's tokens), its coin, and its
    log-probabilities (natural log) given the prefix."""

    words: str
    member: bool                  # included in training (heads)
    score: float                  # what the audit reads: the ratio or the log-probability
    logp_trained: float
    logp_start: float


@dataclass
class TrainingSummary:
    """The fine-tuning run: the first included canary's surprise while it trained, and utility."""

    steps: list[int]              # where the tracked canary was measured (0: the start)
    tracked_bits: list[float]     # −log2 p(words | prefix) of the first included canary
    train_loss: list[float | None]  # mean training loss since the previous measurement
    validation_perplexity: float | None
    opacus_epsilon: float | None  # Opacus' own RDP accountant (None at σ = 0)
    resumed_from_step: int        # 0: trained afresh; the steps: a finished run, re-scored


@dataclass
class DpCanaryAuditResult:
    config: DpCanaryAuditConfig
    prefix: str
    vocabulary: int               # the pool the secrets are drawn from (V word tokens, m·k new
                                  # tokens, N least likely, the corpus' tokens: canary_kinds)
    prior_bits: float             # a canary's surprise under a uniform guess (k·log2 V for words)
    canaries: list[CanaryScore]
    members: int
    n_records: int                # training records: corpus and included canaries' copies
    q: float                      # the Poisson sampling rate of the run
    epsilon_lower: float          # audited, at ``audit.epsilon_lower_confidence``
    epsilon_upper: float | None   # the accountant's ε at δ for one canary (None: σ = 0)
    epsilon_gap: float | None
    auroc: float                  # of the scores, members against non-members
    audit: DpAuditResult
    training: TrainingSummary
    training_seconds: float
    scoring_seconds: float
    device: str
    seconds: float


def run_hash(config: DpCanaryAuditConfig, base: LoadedModel) -> str:
    """What "the same training" means for resuming: every field but the device, the checkpoint
    spacing, the audit's choices and what the canary kind does not read (``UNHASHED``), σ as a
    float, and the files of ``base`` (the loaded ``config.model``) and of the corpus
    (``run_key``); float32 precision, the default added since, stays out too."""
    unused = (NOT_HASHED + NOT_TRAINING + UNHASHED[config.kind]
              + (("precision",) if config.precision == "float32" else ()))
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in unused}
    return run_key(fields | {"sigma": float(config.sigma)}, base, config)


def finetune_plan(config: DpCanaryAuditConfig) -> DPFinetuneConfig:
    """The ``dp-finetune`` config of the one σ this audit trains (what its training reads)."""
    return DPFinetuneConfig(
        model=config.model, corpus=config.corpus, validation=config.validation,
        sigmas=(config.sigma,), steps=config.steps, batch_size=config.batch_size, lr=config.lr,
        clip=config.clip, canary_repeats=config.repeats, max_records=config.max_records,
        block_size=config.block_size, track_every=max(1, config.steps // REPORTS),
        checkpoint_every=config.checkpoint_every, delta=config.delta, seed=config.seed,
        device=config.device, precision=config.precision)


def canary_training_data(plan: DPFinetuneConfig, tokenizer, corpus: list[list[int]],
                         validation: list[str], prefix: list[int], canary_words: np.ndarray,
                         members: np.ndarray) -> tuple[TrainingData, list[list[int]]]:
    """The records (the ``corpus``' records, then ``canary_repeats`` copies of each included
    canary) and every canary's tokens (prefix + secret). The first included canary is the one
    ``dp-finetune``'s measurement tracks while training."""
    sequences = [prefix + row for row in canary_words.tolist()]
    if len(sequences[0]) + 2 > plan.block_size:
        raise UserError(f"a canary takes {len(sequences[0])} tokens: use a block size of at "
                        f"least {len(sequences[0]) + 2}")
    records = list(corpus) + [seq for seq, member in zip(sequences, members) if member
                              for _ in range(plan.canary_repeats)]
    inputs, mask, labels = pack_records(records, tokenizer=tokenizer, block_size=plan.block_size)
    tracked = sequences[int(np.argmax(members))]
    data = TrainingData(tracked, canary_words.shape[1], inputs, mask, labels, validation)
    return data, sequences


def prepare(config: DpCanaryAuditConfig,
            base: LoadedModel) -> tuple[Canaries, TrainingData, list[list[int]]]:
    """The canaries of ``config.kind`` (``canary_kinds.plant``), the training records and every
    canary's tokens."""
    plan = finetune_plan(config)
    corpus, validation = corpus_records(plan, base.tokenizer)
    prefix = base.tokenizer(CANARY_PREFIX, add_special_tokens=False).input_ids
    canaries = plant(config, base, prefix, corpus)
    check_canaries(np.zeros(len(canaries.members)), canaries.members)
    data, sequences = canary_training_data(plan, base.tokenizer, corpus, validation, prefix,
                                           canaries.secrets, canaries.members)
    return canaries, data, sequences


def words_logprobs(lm: LoadedModel, sequences: list[list[int]], words: int, *,
                   progress: Progress, cancel: threading.Event | None) -> np.ndarray:
    """log p(words | prefix) of each canary: the sum of its last ``words`` token scores."""
    scores = score_token_ids(lm, sequences, progress=progress, cancel=cancel)
    return np.array([s.logprobs[-words:].sum(dtype=np.float64) for s in scores])


def canary_epsilon(*, sigma: float, q: float, steps: int, repeats: int,
                   delta: float) -> float | None:
    """The accountant's ε at δ for a canary of ``repeats`` records (module doc); None at σ = 0
    (no guarantee)."""
    if sigma == 0:
        return None
    if repeats == 1:
        return accountant_epsilon(sigma=sigma, q=q, steps=steps, delta=delta)
    return accountant_epsilon(sigma=sigma / repeats, q=1.0, steps=steps, delta=delta)


def train(config: DpCanaryAuditConfig, base: LoadedModel, data: TrainingData, q: float, *,
          progress: Progress,
          cancel: threading.Event | None) -> tuple[torch.nn.Module, TrainingSummary]:
    """Fine-tune at σ with ``dp-finetune``'s training (resumed from a checkpoint of the same
    run); ``Cancelled`` (after a checkpoint) when stopped before the last step."""
    def report(fraction: float, message: str, points: list) -> None:
        last = points[-1]
        progress(fraction, f"σ = {config.sigma:g}: step {last['step']}/{config.steps}, an "
                           f"included canary at {last['secrecy_bits']:.1f} bits")

    run_dir = paths.cache_home() / "dp_canary_audit" / run_hash(config, base)
    run_dir.mkdir(parents=True, exist_ok=True)
    context = TrainingContext(finetune_plan(config), base, data, q, run_dir, report, cancel)
    training = SigmaTraining(config.sigma, context)
    sigma_run = training.run()
    if not sigma_run.finished:
        raise Cancelled()
    points = sigma_run.points
    summary = TrainingSummary([p.step for p in points], [p.secrecy_bits for p in points],
                              [p.train_loss for p in points], sigma_run.validation_perplexity,
                              sigma_run.opacus_epsilon, sigma_run.resumed_from_step)
    return training.training.module.eval(), summary


def run(config: DpCanaryAuditConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DpCanaryAuditResult:
    """Plant the canaries, fine-tune, score them on both models, audit (module doc)."""
    started = time.perf_counter()
    check_cancel(cancel)
    progress(0.0, f"loading {config.model}")
    canaries, data, sequences = prepare(config, resolve_model(config.model,
                                                              device=config.device))
    base, members = canaries.lm, canaries.members   # base: resized for new tokens
    q = 1.0 / math.ceil(len(data.inputs) / config.batch_size)  # Opacus': 1/len(loader)
    check_cancel(cancel)
    logp_start = words_logprobs(base, sequences, config.words, cancel=cancel,
                                progress=share(progress, 0.01, 0.05, "the starting model: "))
    trained_at = time.perf_counter()
    with one_thread(is_small_on_cpu(base.model)):
        model, training = train(config, base, data, q, progress=share(progress, 0.05, 0.9),
                                cancel=cancel)
    scored_at = time.perf_counter()
    logp_trained = words_logprobs(scoring_view(base, model), sequences, config.words,
                                  cancel=cancel,
                                  progress=share(progress, 0.9, 0.98, "the trained model: "))
    scores = logp_trained - logp_start if config.score == "ratio" else logp_trained
    upper = canary_epsilon(sigma=config.sigma, q=q, steps=config.steps, repeats=config.repeats,
                           delta=config.delta)
    heuristic = None   # the last-iterate heuristic: for one record per canary only
    if upper is not None and config.repeats == 1:
        heuristic = last_iterate_epsilon(sigma=config.sigma, q=q, steps=config.steps,
                                         delta=config.delta)
    audit = audit_scores(scores, members, delta=config.delta, confidence=config.confidence,
                         methods=ONE_RUN_METHODS, seed=config.seed, epsilon_upper=upper,
                         epsilon_last_iterate=heuristic,
                         progress=share(progress, 0.98, 1.0, "audit: "), cancel=cancel)
    return DpCanaryAuditResult(
        config=config, prefix=CANARY_PREFIX, vocabulary=canaries.pool,
        prior_bits=canaries.prior_bits,
        canaries=[CanaryScore(*row) for row in zip(canaries.texts, members.tolist(),
                                                    scores.tolist(), logp_trained.tolist(),
                                                    logp_start.tolist())],
        members=int(members.sum()), n_records=len(data.inputs), q=q,
        epsilon_lower=audit.epsilon_lower, epsilon_upper=upper, epsilon_gap=audit.epsilon_gap,
        auroc=float(roc_auc_score(members, scores)), audit=audit, training=training,
        training_seconds=scored_at - trained_at, scoring_seconds=time.perf_counter() - scored_at,
        device=str(base.device), seconds=time.perf_counter() - started)


def tiny_words() -> str:
    """Made-up words " ba be ... zu" (consonant + vowel) for the tiny tokenizer's vocabulary."""
    return " ".join(c + v for c in "bdfghklmnprstvz" for v in "aeiou")


def tiny_config() -> DpCanaryAuditConfig:
    """100 canaries, 40 DP steps (σ = 1) of a tiny random GPT-2 whose tokenizer knows 75
    made-up words, on ``dp-finetune``'s tiny corpus (seconds, no demo build)."""
    from core.models.tiny import tiny_random_models

    [model] = tiny_random_models([*TINY_TEXTS, *[tiny_words()] * 20], ("tiny-canary-lm",),
                                 vocab_size=400, n_embd=32, n_positions=64)
    return DpCanaryAuditConfig(model=model, corpus=(tiny_corpus(),), canaries=100, sigma=1.0,
                               steps=40, batch_size=32, lr=1e-2, max_records=200, block_size=32,
                               checkpoint_every=40, device="cpu")


def headline(result: DpCanaryAuditResult) -> dict[str, float]:
    """The audited ε, the accountant's when there is one, the gap and the AUROC."""
    known = {"epsilon_upper": result.epsilon_upper, "epsilon_gap": result.epsilon_gap}
    return {"epsilon_lower": result.epsilon_lower, "auroc": result.auroc} | {
        name: value for name, value in known.items() if value is not None}


SPEC = AttackSpec(
    name="dp-canary-audit",
    title="Audit a DP fine-tuning run with canaries",
    config_type=DpCanaryAuditConfig,
    result_type=DpCanaryAuditResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: f"canary audit of {c.model}: {c.canaries:,} {c.kind} canaries, "
                       f"σ = {c.sigma:g}, {c.steps} steps",
    table="canaries",
    cost=dp_costs.dp_canary_audit,
)
