"""Membership-inference suite vs a MIMIR-style loop, same process: every attack on the same texts.

The baseline does what MIMIR does in practice: one attack at a time, one text per forward pass,
each attack running the forward passes it needs (the reference ratio also runs the reference,
lowercase the lowercased text, ReCaLL the prefixed text). The suite scores every text once per
model (``core.attacks.mia_scoring``). Both read the same score functions, and the bench checks
that they agree. Models: the demo's (``python -m core demo build``); texts: the demo's private
training speeches and public speeches, ``--texts`` of them (default 2,000). The disk and memory
score caches are off, so both sides compute everything.

    python -m bench.bench_mia [--texts 2000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from core.attacks import mia_scores as ms
from core.attacks.mia_scoring import score_suite
from core.data import read_texts
from core.models import resolve_model
from core.scoring import clear_cache, context_ids

PREFIX_SHOTS = 3


def _forward(lm, ids: list[int]) -> torch.Tensor:
    """log p(· | before) at every position of [context] + ids: one forward pass."""
    full = torch.tensor([context_ids(lm.tokenizer) + ids], device=lm.device)
    return torch.log_softmax(lm.model(full).logits[0, :-1].float(), dim=-1)


def _logprobs(lm, ids: list[int]) -> np.ndarray:
    logp = _forward(lm, ids)
    return logp[torch.arange(len(ids)), torch.tensor(ids)].cpu().numpy()


def _arrays_for(name: str, lm, reference, text: str, prefix_ids: list[int]) -> ms.TextArrays:
    """The arrays one attack needs for one text, from its own forward passes."""
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    if name == "minkpp":
        logp = _forward(lm, ids)
        p = logp.exp()
        mean = (p * logp).sum(-1)
        variance = (p * (logp - mean[:, None]).square()).sum(-1)
        return ms.TextArrays(text, np.array(ids), logp[torch.arange(len(ids)), torch.tensor(ids)]
                             .numpy(), mean.numpy(), variance.numpy())
    arrays = ms.TextArrays(text, np.array(ids), _logprobs(lm, ids))
    extra = {}
    if name == "ref":
        extra["reference"] = _logprobs(reference, ids)
    elif name == "lowercase":
        extra["lowercase"] = _logprobs(lm, lm.tokenizer(text.lower(), add_special_tokens=False)
                                       ["input_ids"])
    elif name == "recall":
        room = max(0, lm.card.context_length - 1 - len(ids))
        prefixed = (prefix_ids[len(prefix_ids) - room:] if room else []) + ids
        extra["prefixed"] = _logprobs(lm, prefixed)[-len(ids):]
    return ms.TextArrays(**(vars(arrays) | extra))


def mimir_style(lm, reference, texts: list[str], settings: ms.ScoreSettings,
                prefix: str) -> dict[str, np.ndarray]:
    """The baseline: for each attack, for each text, its own forward passes."""
    prefix_ids = lm.tokenizer(prefix, add_special_tokens=False)["input_ids"]
    out = {}
    with torch.inference_mode():
        for name in ms.ATTACKS:
            out[name] = np.array([ms.text_scores(_arrays_for(name, lm, reference, t, prefix_ids),
                                                 [name], settings)[name] for t in texts])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    args = parser.parse_args()
    os.environ["LEAKAGE_LAB_SCORE_CACHE_MB"] = "0"
    lm, reference = resolve_model("demo:updated"), resolve_model("demo:base")
    pool = read_texts("demo:private_train") + read_texts("demo:public_train")
    texts = list(dict.fromkeys(t for t in pool if len(t) < 400))[: args.texts + PREFIX_SHOTS]
    prefix, texts = "\n\n".join(texts[:PREFIX_SHOTS]) + "\n\n", texts[PREFIX_SHOTS:]
    corpus = [np.asarray(i) for i in lm.tokenizer(read_texts("demo:validation"),
                                                   add_special_tokens=False)["input_ids"]]
    settings = ms.ScoreSettings(log_frequency=ms.log_token_frequencies(corpus, len(lm.tokenizer)))
    clear_cache()
    start = time.perf_counter()
    suite = score_suite(lm, reference, texts, list(ms.ATTACKS), settings, prefix=prefix,
                        progress=lambda f, m="": None).scores
    suite_s = time.perf_counter() - start
    start = time.perf_counter()
    baseline = mimir_style(lm, reference, texts, settings, prefix)
    baseline_s = time.perf_counter() - start
    for name in ms.ATTACKS:
        assert np.allclose(suite[name], baseline[name], rtol=1e-3, atol=1e-4), name
    print(f"{len(texts):,} texts, {len(ms.ATTACKS)} attacks ({', '.join(ms.ATTACKS)}), on "
          f"{lm.device}, {torch.get_num_threads()} threads; the scores agree")
    print(f"  suite (one pass per model):          {suite_s:7.2f} s")
    print(f"  MIMIR-style (per text, per attack):  {baseline_s:7.2f} s")
    print(f"  ratio: {baseline_s / suite_s:.1f}x")


if __name__ == "__main__":
    main()
