"""A small, generic causal-LM fine-tuning loop on a list of texts (any transformers causal LM).

Each text is trained on as the scoring engine scores it: after one context token
(``core.scoring.context_ids``), cut to ``max_tokens``, right-padded with an attention mask, the
loss on its own tokens only; ``fine_tune_rows`` takes token rows with their targets instead
(a chat template's assistant tokens, as TRL's assistant-only loss). AdamW with a linear warm-up
over the first tenth of the steps, the gradient norm clipped to 1, batches drawn epoch by epoch in a seeded order. With held-out
texts, their mean token loss is measured every ``eval_every`` steps and the trainable weights
with the lowest one are kept (early stopping: what generalises, not what the texts say).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch

from core.errors import UserError
from core.models.card import context_length
from core.scoring.threads import is_small_on_cpu, one_thread
from core.runtime import check_cancel
from core.scoring import context_ids

StepReport = Callable[[int, float], None]  # (steps done, training loss)
Row = tuple[list[int], list[bool]]         # a row's token ids, and whether each is a target
                          # with a load average of about 15)


@dataclass
class TrainingRun:
    """What a fine-tuning did: the loss of every step and, with held-out texts, the step whose
    weights were kept and the held-out loss (mean nats per token) before and at that step."""

    losses: list[float] = field(default_factory=list)
    best_step: int = 0
    heldout_before: float | None = None
    heldout_best: float | None = None


def encode(tokenizer, texts: Sequence[str], max_tokens: int) -> list[Row]:
    """Each non-empty text as ``context + its first max_tokens tokens``, every token a target."""
    if not texts:
        return []
    context = context_ids(tokenizer)
    rows = [context + ids[:max_tokens]
            for ids in tokenizer(list(texts), add_special_tokens=False).input_ids if ids]
    return [(row, [True] * len(row)) for row in rows if len(row) >= 2]


def _pad_id(tokenizer) -> int:
    for token_id in (tokenizer.pad_token_id, *context_ids(tokenizer), tokenizer.eos_token_id):
        if token_id is not None:
            return int(token_id)
    return 0


def _batch(rows: list[Row], pad_id: int, device: torch.device):
    """(input ids, attention mask, labels) of ``rows``; labels are -100 on padding and on the
    tokens a row does not train on (the model shifts them, so a row's first token is never a
    target)."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, (row, trained) in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        labels[i, : len(row)] = torch.where(torch.tensor(trained), ids[i, : len(row)], -100)
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device), labels.to(device)


def _loss(model, rows, pad_id, device) -> torch.Tensor:
    ids, mask, labels = _batch(rows, pad_id, device)
    return model(input_ids=ids, attention_mask=mask, labels=labels, use_cache=False).loss


@torch.no_grad()
def mean_loss(model, rows: list[Row], pad_id: int, device: torch.device,
              batch_size: int) -> float:
    """Mean token loss (nats) of ``rows`` under ``model``, every target token weighted alike."""
    was_training = model.training
    model.eval()
    total = count = 0.0
    for start in range(0, len(rows), batch_size):
        chunk = rows[start: start + batch_size]
        tokens = sum(sum(trained[1:]) for _, trained in chunk)
        total += float(_loss(model, chunk, pad_id, device)) * tokens
        count += tokens
    model.train(was_training)
    return total / count


def _batches(n_rows: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """Index batches, epoch after epoch, each epoch in a fresh seeded order."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(n_rows, generator=generator).tolist()
        for start in range(0, n_rows, batch_size):
            yield order[start: start + batch_size]


def fine_tune(model: torch.nn.Module, tokenizer, texts: Sequence[str], *, steps: int, lr: float,
              batch_size: int, max_tokens: int, seed: int, heldout: Sequence[str] = (),
              **options) -> TrainingRun:
    """Train ``model``'s trainable parameters (in place) on ``texts`` for ``steps`` steps (each
    text cut to fit the model's context), as ``fine_tune_rows``."""
    max_tokens = min(max_tokens, context_length(model) - len(context_ids(tokenizer)))
    return fine_tune_rows(model, tokenizer, encode(tokenizer, texts, max_tokens), steps=steps,
                          lr=lr, batch_size=batch_size, seed=seed,
                          heldout=encode(tokenizer, heldout, max_tokens), **options)


def fine_tune_rows(model: torch.nn.Module, tokenizer, rows: list[Row], *, steps: int, lr: float,
                   batch_size: int, seed: int, heldout: list[Row] = (), eval_every: int = 20,
                   on_step: StepReport | None = None,
                   cancel: threading.Event | None = None) -> TrainingRun:
    """Train on token rows, the loss on each row's targets only (a chat template's assistant
    tokens: ``core.chat``); with ``heldout`` rows, end with the weights of the step of lowest
    held-out loss. Raises ``core.runtime.Cancelled`` between steps when ``cancel`` is set."""
    held = list(heldout)
    if not rows:
        raise UserError("no text to train on: every text is empty once tokenised")
    device, pad_id = next(model.parameters()).device, _pad_id(tokenizer)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    run, best_state = TrainingRun(), None
    with one_thread(is_small_on_cpu(model)):
        if held:
            run.heldout_before = mean_loss(model, held, pad_id, device, batch_size)
            run.heldout_best = run.heldout_before
        model.train()
        for step, indices in zip(range(1, steps + 1), _batches(len(rows), batch_size, seed)):
            check_cancel(cancel)
            loss = _loss(model, [rows[i] for i in indices], pad_id, device)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            run.losses.append(loss.item())
            if held and (step % eval_every == 0 or step == steps):
                current = mean_loss(model, held, pad_id, device, batch_size)
                if current < run.heldout_best:
                    run.heldout_best, run.best_step = current, step
                    best_state = [p.detach().clone() for p in trainable]
            if on_step is not None:
                on_step(step, run.losses[-1])
        if held:
            _restore(trainable, best_state)
        model.eval()
        return run


def _restore(trainable: list[torch.nn.Parameter], best_state: list[torch.Tensor] | None) -> None:
    """Put back the weights of the step of lowest held-out loss."""
    if best_state is None:
        raise UserError("the held-out loss never went below the base's: fine-tuning on this "
                        "sample does not generalise (try a lower learning rate or more texts)")
    with torch.no_grad():
        for parameter, kept in zip(trainable, best_state):
            parameter.copy_(kept)
