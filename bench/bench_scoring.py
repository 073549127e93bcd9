"""Scoring engine vs a per-sample loop (one forward per text, as MIMIR / LLM-PBE do), same process.

A randomly initialised 6-layer, 256-wide GPT-2 (8,192-token vocabulary) scores 192 sequences of
16..192 tokens; both sides compute the same per-token log-probabilities (checked), on the CPU
(or the GPU when there is one). Prints tokens/s for both and the ratio.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from core.models import LoadedModel, resolve_device
from core.models.card import describe
from core.models.tiny import train_tokenizer
from core.scoring import context_ids, score_token_ids
from core.scoring.cache import CACHE

N_SEQUENCES, MIN_LEN, MAX_LEN, VOCAB = 192, 16, 192, 8192


def bench_model() -> LoadedModel:
    torch.manual_seed(0)
    tokenizer = train_tokenizer(["a small corpus for the bench tokenizer"], vocab_size=300)
    config = GPT2Config(vocab_size=VOCAB, n_positions=256, n_embd=256, n_layer=6, n_head=8,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    device = resolve_device("auto")
    model = GPT2LMHeadModel(config).eval().to(device)
    return LoadedModel("bench", "random gpt2", model, tokenizer, device,
                       describe(model, tokenizer, file_format="in memory"))


def per_sample_loop(lm: LoadedModel, sequences: list[list[int]]) -> list[np.ndarray]:
    """The baseline: one forward pass per sequence, no batching."""
    bos = context_ids(lm.tokenizer)[0]
    out = []
    with torch.inference_mode():
        for seq in sequences:
            ids = torch.tensor([[bos] + seq], device=lm.device)
            logprobs = torch.log_softmax(lm.model(ids).logits[0, :-1].float(), -1)
            out.append(logprobs.gather(-1, ids[0, 1:, None])[:, 0].cpu().numpy())
    return out


def main() -> None:
    lm = bench_model()
    rng = np.random.default_rng(0)
    sequences = [rng.integers(1, VOCAB, rng.integers(MIN_LEN, MAX_LEN + 1)).tolist() for _ in range(N_SEQUENCES)]
    n_tokens = sum(len(s) for s in sequences)
    per_sample_loop(lm, sequences[:4])  # warm-up
    times = {"engine": [], "loop": []}
    for _ in range(2):
        CACHE.clear()  # the in-memory cache only: the lab home's disk cache is left alone
        start = time.perf_counter()
        ours = score_token_ids(lm, sequences)
        times["engine"].append(time.perf_counter() - start)
        start = time.perf_counter()
        reference = per_sample_loop(lm, sequences)
        times["loop"].append(time.perf_counter() - start)
    worst = max(float(np.abs(s.logprobs - r).max()) for s, r in zip(ours, reference))
    engine_s, loop_s = min(times["engine"]), min(times["loop"])
    print(f"device: {lm.device}; model: 6x256 GPT-2, vocab {VOCAB}; {N_SEQUENCES} sequences, {n_tokens} tokens")
    print(f"max |engine - loop| log-prob difference: {worst:.2e}")
    print(f"engine (batched, length-sorted): {engine_s:.2f} s  {n_tokens / engine_s:,.0f} tokens/s")
    print(f"per-sample loop (baseline):      {loop_s:.2f} s  {n_tokens / loop_s:,.0f} tokens/s")
    print(f"ratio: {loop_s / engine_s:.2f}x")
    start = time.perf_counter()
    score_token_ids(lm, sequences)
    print(f"cached re-score: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
