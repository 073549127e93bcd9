"""Config fields of a DP-SGD fine-tuning run that ``dp-finetune`` and ``dp-canary-audit`` share:
one definition each, so their ranges and help never drift apart."""

from __future__ import annotations

from typing import Literal

from core.specs import param

Precision = Literal["float32", "bf16-mixed"]


def validation_param() -> str:
    return param("", path="data", label="validation file", help="held-out texts for the "
                 "validation perplexity (empty: a tenth of the corpus)")


def batch_size_param(default: int) -> int:
    return param(default, ge=1, le=4096, help="expected batch size B (Poisson sampling, "
                 "q = 1/⌈N/B⌉)")


def lr_param() -> float:
    return param(3e-3, gt=0.0, le=1.0, label="learning rate", help="AdamW learning rate")


def clip_param() -> float:
    return param(1.0, gt=0.0, le=1e6, label="clip C", help="C, the per-record gradient norm bound")


def max_records_param(default: int, left_out: str) -> int:
    return param(default, ge=10, le=1_000_000, help=f"corpus records kept (drawn at random), "
                 f"{left_out} excluded", page="advanced")


def block_size_param() -> int:
    return param(64, ge=8, le=4096, help="tokens per record (longer ones are cut)",
                 page="advanced")


def precision_param() -> str:
    return param("float32", help="bf16-mixed: the forward and backward passes under bfloat16 "
                 "autocast, the weights, clipping, noise and optimizer in float32 (faster on a "
                 "GPU; the CPU runs it too)", page="advanced")
