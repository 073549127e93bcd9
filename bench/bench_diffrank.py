"""Differential-rank beam search with the KV cache vs naive re-scoring, same process.

Two GPT-2 snapshots (the demo's ``demo:base``/``demo:updated`` when built, else two random
GPT-2s of the demo's shape: 4 layers, 128 wide, 4,096 tokens). Measured in beam-search
extensions (a sequence and one next token) scored per second, both models included:

* ours: ``Expander.step`` with the KV cache, one forward of the new token per beam;
* naive (the issue's baseline): every candidate sequence (beam + one token) scored in full by
  both models through the scoring engine, without the cache (timed on a sample of candidates);
* also printed: re-running each beam's whole prefix without the cache (no per-candidate work).
"""

from __future__ import annotations

import time

import torch
from tokenizers import Tokenizer, models as tokenizer_models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from core.attacks.diffrank.search import Beams, Expander, beam_search, context_of, widths
from core.demo import scenario
from core.errors import UserError
from core.models import LoadedModel, resolve_device, resolve_model
from core.models.card import describe
from core.models.tiny import EOS
from core.scoring import clear_cache, score_token_ids

LENGTH, BEAM, NAIVE_SAMPLE = 4, 256, 1024


def word_tokenizer(size: int) -> PreTrainedTokenizerFast:
    """A word-level tokenizer of ``size`` tokens (<|endoftext|> and w1 ... w{size-1})."""
    vocab = {EOS: 0} | {f"w{i}": i for i in range(1, size)}
    tokenizer = Tokenizer(tokenizer_models.WordLevel(vocab, unk_token=EOS))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=EOS, eos_token=EOS,
                                   pad_token=EOS, unk_token=EOS)


def models() -> tuple[LoadedModel, LoadedModel, str]:
    try:
        scenario.load_manifest()
        return resolve_model("demo:base"), resolve_model("demo:updated"), "the demo's snapshots"
    except UserError:
        pass
    tokenizer = word_tokenizer(4096)
    device = resolve_device("auto")
    pair = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        config = GPT2Config(vocab_size=4096, n_positions=256, n_embd=128, n_layer=4, n_head=4,
                            bos_token_id=0, eos_token_id=0)
        model = GPT2LMHeadModel(config).eval().to(device)
        pair.append(LoadedModel(f"bench{seed}", "random gpt2", model, tokenizer, device,
                                describe(model, tokenizer, file_format="in memory")))
    return pair[0], pair[1], "two random GPT-2s of the demo's shape"


def main() -> None:
    before, after, what = models()
    print(f"{what} on {before.device}; L = {LENGTH}, k = {BEAM} (widths {widths(BEAM, LENGTH)})")

    expander = Expander(before, after, relative=False)
    start = time.perf_counter()
    (beams,), _ = beam_search(expander, beam=BEAM, length=LENGTH)
    ours_s = time.perf_counter() - start
    ours = expander.extensions / ours_s
    print(f"ours (KV cache):          {expander.extensions:>10,} extensions in {ours_s:7.2f} s "
          f"= {ours:12,.0f} /s")

    # the same search's last step, every candidate of the (L-1)-token beams scored in full
    prefixes = beams.tokens[:, :-1].unique(dim=0).tolist()
    allowed = expander.allowed.nonzero()[:, 0].tolist()
    candidates = [p + [t] for p in prefixes for t in allowed][:NAIVE_SAMPLE]
    clear_cache()
    start = time.perf_counter()
    for lm in (before, after):
        score_token_ids(lm, candidates)
    naive_s = time.perf_counter() - start
    naive = len(candidates) / naive_s
    print(f"naive (each candidate):   {len(candidates):>10,} extensions in {naive_s:7.2f} s "
          f"= {naive:12,.0f} /s")

    # re-running each beam's prefix (context + tokens) without the cache, at every step
    recompute = Expander(before, after, relative=False)
    context = context_of(before)
    start = time.perf_counter()
    beams = recompute.start()
    for width in widths(BEAM, LENGTH):
        beams = recompute.step(beams, width)
        pending = torch.cat([torch.tensor([context]).expand(len(beams.scores), -1), beams.tokens], 1)
        beams = Beams(beams.tokens, beams.scores, pending, [None, None])
    prefix_s = time.perf_counter() - start
    prefix = recompute.extensions / prefix_s
    print(f"no cache (whole prefix):  {recompute.extensions:>10,} extensions in {prefix_s:7.2f} s "
          f"= {prefix:12,.0f} /s")
    print(f"ratio vs naive: {ours / naive:,.0f}x (target >= 5x); "
          f"vs prefix recompute: {ours / prefix:.2f}x")


if __name__ == "__main__":
    main()
