"""Train the demo's GPT-2 models: a deterministic, cancellable next-token training loop.

Texts are joined into one token stream ``EOS text EOS text ...`` (EOS doubles as BOS, as in
GPT-2, and matches the scoring engine, which prepends it), and each step trains on random
windows of that stream drawn from a seeded generator, so a seed fixes the data order.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import torch
from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

from core.runtime import check_cancel

StepReport = Callable[[int, float], None]  # (step done, loss)


def token_stream(tokenizer: PreTrainedTokenizerFast, texts: Sequence[str]) -> torch.Tensor:
    """``EOS t1 EOS t2 ... EOS`` as one 1-D tensor of token ids."""
    eos = tokenizer.eos_token_id
    ids = [eos]
    for encoded in tokenizer(list(texts), add_special_tokens=False).input_ids:
        ids.extend(encoded)
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def train_lm(
    model: GPT2LMHeadModel,
    stream: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    block_size: int,
    lr: float,
    seed: int,
    on_step: StepReport | None = None,
    cancel: threading.Event | None = None,
) -> list[float]:
    """AdamW on random ``block_size`` windows of ``stream``; returns the loss of every step.

    Learning rate: linear warm-up over the first 10% of steps, then cosine decay to lr/10.
    Raises ``core.errors.Cancelled`` between steps when ``cancel`` is set.
    """
    if len(stream) < block_size + 2:
        raise ValueError(f"a training stream of {len(stream)} tokens is shorter than one block")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, betas=(0.9, 0.95))
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, warmup, steps))
    offsets = torch.arange(block_size)
    losses: list[float] = []
    model.train()
    for step in range(steps):
        check_cancel(cancel)
        starts = torch.randint(len(stream) - block_size, (batch_size,), generator=generator)
        batch = stream[starts[:, None] + offsets]
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1, losses[-1])
    model.eval()
    return losses


def _lr_factor(step: int, warmup: int, steps: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.1 + 0.45 * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def stream_perplexity(model: GPT2LMHeadModel, stream: torch.Tensor, *, block_size: int) -> float:
    """Perplexity of ``stream`` in consecutive non-overlapping blocks."""
    model.eval()
    n_blocks = (len(stream) - 1) // block_size
    blocks = stream[: n_blocks * block_size].view(n_blocks, block_size)
    total = sum(float(model(input_ids=chunk, labels=chunk).loss) * len(chunk)
                for chunk in blocks.split(16))
    return math.exp(total / n_blocks)
