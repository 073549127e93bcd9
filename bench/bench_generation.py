"""Batched generation (``core.generation.sampling.generate``) vs transformers' ``generate`` on the
same batches (finished samples kept in the batch until its last one ends) and vs one sample
per ``generate`` call; same process, same sampler (top-n, n = 40), same model.

Default model: a randomly initialised GPT-2 the size of the demo's (4 layers, 128 wide, 4,096
tokens, 256 positions), so the bench needs no build; its samples seldom end early. ``--model
SOURCE`` benches a real one (``demo:updated``, whose samples mostly end after a few dozen
tokens, ``smollm2``, a folder). Prints generated tokens/s of each and the ratios.
Run: ``.venv/bin/python -m bench.bench_generation [--model demo:updated --samples 512
--tokens 255 --batch-size 64]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

from core.generation.sampling import generate, stop_ids
from core.models import LoadedModel, resolve_device, resolve_model
from core.models.card import describe
from core.models.tiny import train_tokenizer
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


# generate() options that switch off any sampling default a model's generation config sets.
NEUTRAL_GENERATION = dict(temperature=1.0, top_p=1.0, typical_p=1.0, repetition_penalty=1.0,
                          no_repeat_ngram_size=0)


def transformers_generate(lm: LoadedModel, n: int, tokens: int, top_n: int, batch: int = 1) -> int:
    """The baselines: ``generate`` with its own top-k warper on batches of ``batch`` samples
    (1: one sample per call); tokens made, end-of-text included."""
    stops = stop_ids(lm)
    made = 0
    for start in range(0, n, batch):
        torch.manual_seed(start)
        prompt = torch.tensor([context_ids(lm.tokenizer)] * min(batch, n - start), device=lm.device)
        with torch.inference_mode():
            out = lm.model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                                    do_sample=True, max_new_tokens=tokens, top_k=top_n,
                                    **NEUTRAL_GENERATION, eos_token_id=stops, pad_token_id=stops[0])
        for row in out[:, prompt.shape[1]:].cpu().numpy():
            ends = np.flatnonzero(np.isin(row, stops))
            made += int(ends[0]) + 1 if ends.size else len(row)
    return made


def one_at_a_time(lm: LoadedModel, n: int, tokens: int, top_n: int) -> int:
    """The baseline of one sample per ``generate`` call; tokens made."""
    return transformers_generate(lm, n, tokens, top_n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a model source (default: a random demo-sized GPT-2)")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    transformers.logging.set_verbosity_error()   # its baselines' warning that an all-ones mask is none
    lm = resolve_model(args.model) if args.model else demo_sized_model()
    print(f"model {lm.name} ({lm.card.parameters:,} parameters) on {lm.device}; "
          f"{args.samples} samples of at most {args.tokens} tokens, top-n 40")
    generate(lm, Sampler(top_k=40), [[]] * 2, max_new_tokens=4)  # warm-up
    ours = generate(lm, Sampler(top_k=40), [[] for _ in range(args.samples)],
                    max_new_tokens=args.tokens, batch_size=args.batch_size)
    rates = {f"batched generate (batch {args.batch_size})": ours.new_tokens / ours.seconds}
    for name, batch in ((f"transformers generate (batch {args.batch_size})", args.batch_size),
                        ("one sample at a time", 1)):
        started = time.perf_counter()
        tokens = transformers_generate(lm, args.samples, args.tokens, 40, batch)
        rates[name] = tokens / (time.perf_counter() - started)
    ours_rate = rates[next(iter(rates))]
    for name, rate in rates.items():
        print(f"{name:36s} {rate:9,.0f} tokens/s   ours is {ours_rate / rate:.1f}x")


if __name__ == "__main__":
    main()
