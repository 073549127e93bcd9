"""Scoring engine vs a plain batch-32 loop vs a per-text loop, on real vocabularies, same process.

SmolLM2-135M (49,152-token vocabulary; ``core.models.resolve_model("smollm2")``) and the demo's
updated model (``demo:updated``, 2,048 tokens) score texts of about 64 and about 256 tokens. The
baselines are what a script would write: ``model(input_ids, attention_mask).logits`` then a
float32 log-softmax, either on batches of 32 texts sorted by length, or one text at a time. All
three compute the same per-token log-probabilities (checked, relative to max(1, |log p|): how a
text is padded and batched changes SmolLM2's float32 attention by up to ~1e-4 of that). Prints
tokens/s and the engine's ratio to each baseline, and each method's share of the machine's
float32 matmul rate at the model's MLP shape (measured here): no batching can beat that rate, so
it caps the engine's ratio to the per-text loop at 1 / (the loop's share). The disk cache is off and the in-memory one
emptied before each engine run, so the engine computes every score (and the lab home's cached
scores are left alone).

    python -m bench.bench_scoring_vocab [--models smollm2 demo:updated] [--texts 64] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from core.models import LoadedModel, load_model, resolve_model
from core.scoring import context_ids, score_token_ids
from core.scoring.cache import BUDGET_ENV, CACHE

LENGTHS = {"~64": (48, 80), "~256": (192, 255)}  # the demo's context is 256 tokens with its EOS
LOOP_BATCH = 32


def batched_loop(lm: LoadedModel, sequences: list[list[int]], batch: int = LOOP_BATCH) -> list[np.ndarray]:
    """The baseline: batches of ``batch`` texts sorted by length, right-padded, full logits."""
    bos = context_ids(lm.tokenizer)[0]
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]), reverse=True)
    out: list[np.ndarray] = [np.zeros(0)] * len(sequences)
    with torch.inference_mode():
        for begin in range(0, len(order), batch):
            rows = [[bos] + sequences[i] for i in order[begin : begin + batch]]
            length = max(len(r) for r in rows)
            ids = torch.tensor([r + [bos] * (length - len(r)) for r in rows], device=lm.device)
            mask = torch.tensor([[1] * len(r) + [0] * (length - len(r)) for r in rows], device=lm.device)
            logits = lm.model(input_ids=ids, attention_mask=mask).logits[:, :-1]
            logprobs = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None])[..., 0].cpu().numpy()
            for row, i in enumerate(order[begin : begin + batch]):
                out[i] = logprobs[row, : len(rows[row]) - 1]
    return out


def per_text_loop(lm: LoadedModel, sequences: list[list[int]]) -> list[np.ndarray]:
    """The baseline of MIMIR / LLM-PBE: one forward pass per text."""
    return batched_loop(lm, sequences, batch=1)


def flops_per_token(lm: LoadedModel, length: float) -> float:
    """2 x the weights each token multiplies (all but the embedding tables, the head counted even
    when tied), plus causal attention's 2 x 2 x (length / 2) x width per layer."""
    model, head = lm.model, lm.model.get_output_embeddings()
    tables = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding))
    weights = sum(p.numel() for p in model.parameters()) - tables + head.weight.numel()
    layers = model.config.num_hidden_layers
    return 2 * weights + 2 * length * head.in_features * layers


def matmul_rate(lm: LoadedModel, rows: int = 1024) -> float:
    """FLOP/s of a float32 (rows x width) @ (width x MLP width) product on this machine, best of 5."""
    width = lm.model.get_output_embeddings().in_features
    config = lm.model.config
    inner = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * width
    a, b = torch.randn(rows, width), torch.randn(width, inner)
    a @ b
    best = min(_timed(torch.mm, a, b)[0] for _ in range(5))
    return 2 * rows * width * inner / best


def _timed(function, *args) -> tuple[float, list[np.ndarray]]:
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def bench(lm: LoadedModel, sequences: list[list[int]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` seconds of each method (the engine's cache emptied before each run)."""
    times: dict[str, list[float]] = {"engine": [], "batch-32 loop": [], "per-text loop": []}
    for _ in range(repeats):
        CACHE.clear()
        seconds, ours = _timed(lambda: [s.logprobs for s in score_token_ids(lm, sequences)])
        times["engine"].append(seconds)
        for name, method in (("batch-32 loop", batched_loop), ("per-text loop", per_text_loop)):
            seconds, theirs = _timed(method, lm, sequences)
            times[name].append(seconds)
            worst = max(float((np.abs(a - b) / np.maximum(1, np.abs(b))).max()) for a, b in zip(ours, theirs))
            assert worst < 1e-3, f"{name} differs from the engine by {worst:.2e} (relative)"
    return {name: min(values) for name, values in times.items()}


def bfloat16_tradeoff(source: str, float32: LoadedModel, sequences: list[list[int]]) -> str:
    """The engine on the model's bfloat16 weights against its float32 ones: speed-up, and how far
    the per-token log-probabilities move (mean and largest |difference|, nats)."""
    half = load_model(source, name=f"{source}@bfloat16", device="cpu", dtype="bfloat16")
    runs = {}
    for lm in (float32, half):
        score_token_ids(lm, sequences[:2])   # warm-up
        CACHE.clear()
        runs[lm] = _timed(lambda: [s.logprobs for s in score_token_ids(lm, sequences)])
    gaps = np.concatenate([np.abs(a - b) for a, b in zip(runs[float32][1], runs[half][1])])
    return (f"  bfloat16 weights: the engine is {runs[float32][0] / runs[half][0]:.2f}x its float32 self, "
            f"log-probabilities move by {gaps.mean():.3f} nats on average, {gaps.max():.2f} at most")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2", "demo:updated"])
    parser.add_argument("--texts", type=int, default=64, help="texts per length")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ[BUDGET_ENV] = "0"  # no disk cache: time the computation
    rng = np.random.default_rng(0)
    for source in args.models:
        lm = resolve_model(source, device="cpu")
        vocab = lm.card.vocab_size
        per_text_loop(lm, [[1, 2, 3]])  # warm-up
        for label, (low, high) in LENGTHS.items():
            sequences = [rng.integers(1, vocab, rng.integers(low, high + 1)).tolist() for _ in range(args.texts)]
            n_tokens = sum(len(s) for s in sequences)
            seconds = bench(lm, sequences, args.repeats)
            flops, rate = flops_per_token(lm, n_tokens / len(sequences)) * n_tokens, matmul_rate(lm)
            print(f"{source} (vocab {vocab:,}), {args.texts} texts of {label} tokens ({n_tokens:,} tokens), "
                  f"{torch.get_num_threads()} threads, float32 matmul at its MLP shape {rate / 1e9:.0f} GFLOP/s:")
            for name, value in seconds.items():
                print(f"  {name:14s} {value:7.2f} s  {n_tokens / value:9,.0f} tokens/s  "
                      f"{flops / value / rate:4.0%} of the matmul rate  "
                      f"engine is {value / seconds['engine']:.2f}x")
            print(f"  at 100% of that rate, scoring would be {rate * seconds['per-text loop'] / flops:.2f}x "
                  "the per-text loop")
            if label == "~64":
                print(bfloat16_tradeoff(source, lm, sequences))


if __name__ == "__main__":
    main()
