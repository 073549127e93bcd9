"""The model of cost: a run is a list of ``Work`` items, each priced in seconds and bytes.

Seconds, for a model of F(L) FLOPs per token at L tokens of context (``ModelSize.flops_per_token``),
the rate R(rows) of this machine's matrix products at the model's shape (``core.cost.rate``'s
one-thread rate x (1 + PARALLEL x (threads - 1))) and the time s of one small operation (both
measured now: they follow the machine's load):

- load:      (LOAD_OPS + parameters x LOAD_OPS_PER_PARAM) x s (nothing for a model loaded);
- text:      texts x TEXT_OPS x s (files read and tokenised besides the models' work);
- score:     tokens x F(L) / (R(1,024) x EFFICIENCY["score"])
             + (calls x layers x CALL_OPS + sequences x SEQUENCE_OPS) x s;
- generate:  tokens x F(L) / (R(batch) x EFFICIENCY["generate"])
             + (steps x layers x CALL_OPS + tokens x vocabulary x SAMPLE_OPS) x s;
- train:     tokens x F(L) x (1 + backward) x slowdown / (R(rows) x EFFICIENCY["train"])
             + steps x (3 x layers x CALL_OPS + trainable x OPTIMIZER_OPS) x s, R of one
             thread for a small model (as ``core.scoring.threads`` trains it);
- cpu:       its seconds (the analysis after the scoring, e.g. bootstrap resamples).

Bytes: the process (torch and transformers), every model's weights (4 bytes each on the CPU,
2 on a GPU), and the largest transient of one item: a scoring batch's activations and its chunk
of float32 logits (``core.scoring.engine``'s budgets), a generation batch's KV cache and logits,
or a training step's copy of the weights, gradients, AdamW moments, activations and logits.

The constants are fitted to runs of the scoring engine, generation and fine-tuning on the
demo's GPT-2 and on SmolLM2-135M on this project's 2-core CPU: see ``core.cost``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.cost.rate import matmul_rate, op_seconds
from core.cost.sizes import ModelSize
from core.scoring.threads import SMALL_MODEL

Kind = Literal["load", "text", "score", "generate", "train", "cpu"]

# Fitted on this machine (see core.cost's docstring for the runs and their spread).
EFFICIENCY = {"score": 0.5, "generate": 0.6, "train": 0.3}  # of the measured product rate
# Training a model past SMALL_MODEL on every thread: SmolLM2-135M's all-weight steps (forward and
# backward 2.0 s at 8 x 66 tokens, bench/bench_train_step.py; shift-build's 298 steps in 856 s)
# and a 12-step domain reference (11.7 s a step at 8 x 256 tokens, docs/realistic-scenario.md)
LARGE_TRAIN_EFFICIENCY = 0.7
PARALLEL = 0.5           # what each CPU thread past the first adds, in one-thread rates
CALL_OPS = 27            # small operations per layer and forward call: norms, attention, ...
SEQUENCE_OPS = 1         # per scored sequence: windows, readouts, the cache's bookkeeping
SAMPLE_OPS = 1e-4        # per logit of a drawn token: warp, top-k, softmax, draw
OPTIMIZER_OPS = 1e-4     # per trainable weight and step: clipping, AdamW (bench/bench_train_step.py)
LOAD_OPS, LOAD_OPS_PER_PARAM = 7e3, 7e-4   # reading, checking, the perplexity probe
TEXT_OPS = 0.7           # per text read and tokenised outside the models (a corpus, prefixes)
PROCESS_BYTES = 0.65e9   # python, torch and transformers imported, the run's own data
SCORE_ROWS = 1024        # window tokens per scoring batch on the CPU (core.scoring.engine)
ACTIVATION_WIDTHS = 32   # hidden-sized vectors per token a forward pass holds at once
LOGITS_BUDGET = 64 * 2**20   # bytes of float32 logits per scoring chunk on the CPU
TRAIN_WIDTHS = 24        # hidden-sized float32 vectors per token and layer kept for backward


@dataclass(frozen=True)
class Work:
    """One part of a run: what it does to which model, in the units its cost grows with."""

    kind: Kind
    what: str                   # one line for people
    model: ModelSize | None = None
    tokens: float = 0.0         # tokens through the model, all calls together
    calls: float = 0.0          # forward calls: scoring batches, decoding steps, training steps
    rows: float = 1.0           # tokens one call multiplies at once
    length: float = 1.0         # mean tokens of context a token attends to
    sequences: float = 0.0      # sequences scored (text: the texts read)
    trainable: float = 0.0      # train: weights the optimizer updates
    backward: float = 2.0       # train: backward FLOPs per forward FLOP (1 for LoRA)
    slowdown: float = 1.0       # train: DP-SGD's per-example clipping
    seconds: float = 0.0        # cpu: seconds outside the models


def bytes_per_weight(device: str) -> int:
    return 2 if device == "cuda" else 4


def threads(work: Work, device: str) -> float:
    """How many one-thread rates the work gets: 1 training a small model (one thread:
    ``core.scoring.threads``) or on a GPU, else 1 + PARALLEL per further CPU thread."""
    import torch

    if device == "cuda" or (work.kind == "train" and work.model.parameters < SMALL_MODEL):
        return 1.0
    return 1 + PARALLEL * (torch.get_num_threads() - 1)


def _rate(work: Work, device: str, rows: float) -> float:
    """FLOP/s of ``work``'s products: the measured one-thread rate, its threads, its efficiency."""
    size = work.model
    weights = (size.parameters - size.tables) * bytes_per_weight(device)
    large_training = work.kind == "train" and size.parameters >= SMALL_MODEL
    return (matmul_rate(device, rows, size.width, size.inner, weights) * threads(work, device)
            * (LARGE_TRAIN_EFFICIENCY if large_training else EFFICIENCY[work.kind]))


def seconds(work: Work, device: str) -> float:
    """The seconds ``work`` takes on ``device`` (see the module doc)."""
    size = work.model
    if work.kind == "cpu":
        return work.seconds
    op = op_seconds(device)
    if work.kind == "load":
        return 0.0 if size.loaded else (LOAD_OPS + size.parameters * LOAD_OPS_PER_PARAM) * op
    if work.kind == "text":
        return work.sequences * TEXT_OPS * op
    flops = work.tokens * size.flops_per_token(work.length)
    if work.kind == "score":
        return (flops / _rate(work, device, SCORE_ROWS)
                + (work.calls * size.layers * CALL_OPS + work.sequences * SEQUENCE_OPS) * op)
    if work.kind == "generate":
        return (flops / _rate(work, device, work.rows)
                + (work.calls * size.layers * CALL_OPS + work.tokens * size.vocab * SAMPLE_OPS) * op)
    return (flops * (1 + work.backward) * work.slowdown / _rate(work, device, work.rows)
            + work.calls * (3 * size.layers * CALL_OPS + work.trainable * OPTIMIZER_OPS) * op)


def transient_bytes(work: Work, device: str) -> float:
    """Memory ``work`` holds beyond the process and the loaded weights, at its peak."""
    size = work.model
    if size is None or work.kind in ("cpu", "load", "text"):
        return 0.0
    width = size.width * 4
    if work.kind == "score":
        rows = min(SCORE_ROWS, work.rows)
        return rows * width * ACTIVATION_WIDTHS + min(LOGITS_BUDGET, rows * size.vocab * 12)
    if work.kind == "generate":   # keys and values of a batch of samples of twice the mean length
        cache = work.rows * 2 * work.length * 2 * size.layers * size.kv_width * bytes_per_weight(device)
        return cache + work.rows * (size.vocab * 12 + width * ACTIVATION_WIDTHS)
    per_token = size.layers * (TRAIN_WIDTHS * width + 8 * size.inner + 8 * size.heads * work.length)
    return (size.parameters * bytes_per_weight(device) + work.trainable * 12
            + work.rows * (per_token + size.vocab * 12))
