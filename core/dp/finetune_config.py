"""``dp-finetune``'s config and results (``core.dp.finetune`` runs them): the fields shared with
``dp-canary-audit`` come from ``core.dp.training_params``; the user unit's from
``core.dp.user_level``'s method (Charles et al. 2025)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.bounds import training_run
from core.dp import training_params
from core.errors import UserError
from core.specs import check_params, param

MAX_SIGMAS = 10
NOT_HASHED = ("checkpoint_every", "device")        # they do not change the numbers
USER_FIELDS = ("unit", "user_samples_per_step", "user_gradient", "user_column")


@dataclass(frozen=True)
class DPFinetuneConfig:
    model: str = param("", help="a model source or loaded name (folder, .zip, .gguf, smollm2, "
                                "a named source)", path="model")
    corpus: tuple[str, ...] = param((), label="corpus files", help="training texts: .txt, .json, "
                                    ".jsonl or .csv files (records holding the canary's prompt "
                                    "are left out)", path="data")
    validation: str = training_params.validation_param()
    sigmas: tuple[float, ...] = training_run.sigma_param(
        (0.0, 0.5, 1.0), label="noise multipliers σ",
        help="one fine-tuning per σ; 0 is the non-private reference")
    steps: int = param(300, ge=1, le=1_000_000, help="optimizer steps per σ")
    batch_size: int = training_params.batch_size_param(32)
    lr: float = training_params.lr_param()
    clip: float = training_params.clip_param()
    canary_repeats: int = param(200, ge=1, le=10_000, help="copies of the canary in the "
                                "training set (the paper: up to 280)")
    max_records: int = training_params.max_records_param(2000, "canary copies")
    block_size: int = training_params.block_size_param()
    track_every: int = param(25, ge=1, le=1_000_000, help="steps between two measurements of "
                             "the secrecy", page="advanced")
    checkpoint_every: int = param(50, ge=1, le=1_000_000, help="steps between two checkpoints",
                                  page="advanced")
    validation_texts: int = param(200, ge=1, le=100_000, help="held-out texts for the "
                                  "validation perplexity", page="advanced")
    delta: float = param(1e-5, gt=0.0, lt=1.0, label="δ", help="δ of the reported ε")
    seed: int = param(0, ge=0, le=2**31 - 1, help="canary digits, record choice, batches and "
                                                  "noise", page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one",
                                                   page="advanced")
    precision: training_params.Precision = training_params.precision_param()
    unit: Literal["example", "user"] = param(
        "example", widget="radio", label="privacy unit", help="example: Poisson over records, "
        "each clipped; user: Poisson over users (B users per step), each user's gradient "
        "clipped as one and ε for a whole user (core.dp.user_level)")
    user_samples_per_step: int = param(4, ge=1, le=10_000, label="samples per user per step k",
                                       help="user unit: records each sampled user contributes",
                                       page="advanced")
    user_gradient: Literal["mean", "sum"] = param("mean", help="user unit: a user's gradient "
                                                  "is the mean or the sum of their records'",
                                                  page="advanced")
    user_column: str = param("user_id", help="user unit: the corpus records' user field; a "
                             "record without one is a user of its own, the canary's copies one",
                             page="advanced")

    def __post_init__(self) -> None:
        check_params(self)
        if not self.model.strip():
            raise UserError("choose a model (a folder, a .zip, a .gguf, smollm2 or a named source)")
        if not self.corpus:
            raise UserError("give a corpus: one or more files of training texts")
        if self.unit == "user" and not self.user_column.strip():
            raise UserError("name the corpus records' user field (user_column), e.g. user_id")
        if not 1 <= len(self.sigmas) <= MAX_SIGMAS:
            raise UserError(f"give 1 to {MAX_SIGMAS} noise multipliers σ, e.g. 0,0.5,1")
        if len(set(self.sigmas)) != len(self.sigmas):
            raise UserError(f"the noise multipliers σ must not repeat, got {self.sigmas}")


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
    q: float                      # sampling rate of the privacy unit: records, or users
    grad_sample_mode: str         # Opacus mode for σ > 0
    clipping_modes: dict[str, str]  # trainable layer type -> how its per-record norm is computed
    run_hash: str
    checkpoint_dir: str
    runs: list[SigmaRun]
    device: str
    seconds: float
    stopped_early: bool = False
    unit: str = "example"
    n_users: int | None = None    # user unit: users, the canary's owner included
