"""Training steps as work (``core.cost.work``'s ``train`` items): what the specs that fine-tune
a model (the domain reference, DP fine-tuning, the canary audit, the scenario builds) price
their steps with."""

from __future__ import annotations

from core.cost.sizes import ModelSize, chars_per_token
from core.cost.work import Work


def lora_weights(size: ModelSize, rank: int) -> int:
    """About the weights LoRA adds on every linear layer but the output (4 attention
    projections and 3 MLP ones a layer)."""
    return size.layers * rank * (8 * size.width + 3 * (size.width + size.inner))


def training(size: ModelSize, *, steps: int, batch: int, block: float, trainable: float,
             what: str, backward: float = 2.0, slowdown: float = 1.0) -> Work:
    """``steps`` optimizer steps on batches of ``batch`` rows of ``block`` tokens."""
    return Work("train", f"{what}: {steps:,} steps x {batch:,} x {block:,.0f} tokens on "
                f"{size.source}", size, tokens=steps * batch * block, calls=steps,
                rows=batch * block, length=block / 2, trainable=trainable, backward=backward,
                slowdown=slowdown)


def batch_length(texts: list[str], size: ModelSize, most: int, batch: int) -> tuple[float, bool]:
    """Tokens of a training batch's rows: padded to the longest of ``batch`` texts (the
    quantile 1 - 1/(batch+1) of their lengths), at most ``most`` + the context token."""
    ratio, measured = chars_per_token(texts, size)
    lengths = sorted(min(most, len(t) / ratio) + 1 for t in texts)
    return lengths[min(len(lengths) - 1, int(len(lengths) * batch / (batch + 1)))], measured


