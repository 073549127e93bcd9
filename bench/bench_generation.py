"""Batched generation (``core.attacks.generation.generate``) vs a one-sample-at-a-time
``generate`` loop, same process, same sampler (top-n, n = 40), same model.

Default model: a randomly initialised GPT-2 the size of the demo's (4 layers, 128 wide, 4,096
tokens, 256 positions), so the bench needs no build; ``--model SOURCE`` benches a real one
(``demo:updated``, ``smollm2``, a folder). Prints generated tokens/s of both and the ratio.
Run: ``.venv/bin/python -m bench.bench_generation [--samples 64 --tokens 64 --batch-size 64]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from core.attacks.generation import NEUTRAL_GENERATION, generate, stop_ids
from core.models.tiny import train_tokenizer
from core.models import LoadedModel, resolve_device, resolve_model
from core.models.card import describe
from core.scoring import Sampler, context_ids


def demo_sized_model() -> LoadedModel:
    torch.manual_seed(0)
    tokenizer = train_tokenizer(["a small corpus for the bench tokenizer"], vocab_size=300)
    config = GPT2Config(vocab_size=4096, n_positions=256, n_embd=128, n_layer=4, n_head=4,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    device = resolve_device("auto")
    model = GPT2LMHeadModel(config).eval().to(device)
    return LoadedModel("bench", "random gpt2", model, tokenizer, device,
                       describe(model, tokenizer, file_format="in memory"))


def one_at_a_time(lm: LoadedModel, n: int, tokens: int, top_n: int) -> int:
    """The baseline: ``generate`` with its own top-k warper, one sample per call; tokens made."""
    stops = stop_ids(lm)
    made = 0
    for i in range(n):
        torch.manual_seed(i)
        prompt = torch.tensor([context_ids(lm.tokenizer)], device=lm.device)
        with torch.inference_mode():
            out = lm.model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                                    do_sample=True, max_new_tokens=tokens,
                                    **(NEUTRAL_GENERATION | {"top_k": top_n}),
                                    eos_token_id=stops, pad_token_id=stops[0])
        row = out[0, prompt.shape[1]:].cpu().numpy()
        ends = np.flatnonzero(np.isin(row, stops))
        made += int(ends[0]) + 1 if ends.size else len(row)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a model source (default: a random demo-sized GPT-2)")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    lm = resolve_model(args.model) if args.model else demo_sized_model()
    print(f"model {lm.name} ({lm.card.parameters:,} parameters) on {lm.device}; "
          f"{args.samples} samples of at most {args.tokens} tokens, top-n 40")
    generate(lm, Sampler(top_k=40), [[]] * 2, max_new_tokens=4)  # warm-up
    ours = generate(lm, Sampler(top_k=40), [[] for _ in range(args.samples)],
                    max_new_tokens=args.tokens, batch_size=args.batch_size)
    ours_rate = ours.new_tokens / ours.seconds
    started = time.perf_counter()
    base_tokens = one_at_a_time(lm, args.samples, args.tokens, 40)
    base_rate = base_tokens / (time.perf_counter() - started)
    print(f"batched generate (batch {args.batch_size}): {ours.new_tokens} tokens in "
          f"{ours.seconds:.2f} s = {ours_rate:,.0f} tokens/s")
    print(f"one sample at a time:       {base_tokens} tokens in "
          f"{base_tokens / base_rate:.2f} s = {base_rate:,.0f} tokens/s")
    print(f"ratio: {ours_rate / base_rate:.1f}x")


if __name__ == "__main__":
    main()
