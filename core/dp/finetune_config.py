"""The config of a DP fine-tuning run (Stock et al. 2022, §4.3) and its limits: read by the run
(``finetune``) and by its data preparation (``finetune_data``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.bounds import training_run
from core.dp import training_params
from core.errors import UserError
from core.specs import check_params, param

MAX_SIGMAS = 10
NOT_HASHED = ("checkpoint_every", "device")        # they do not change the numbers


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
