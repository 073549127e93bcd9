"""Membership-inference suite vs two per-text loops, same process: every attack on the same texts.

- MIMIR-style (``mimir_style``): what MIMIR does in practice: one attack at a time, one text per
  forward pass, each attack running the forward passes it needs (the reference ratio also runs
  the reference, lowercase the lowercased text, ReCaLL the prefixed text).
- One pass per text (``shared_pass``): the fair per-text baseline: one text at a time, but each
  of its forward passes (target, reference, lowercased, prefixed) computed once and shared by
  every attack that reads it (loss, zlib, Min-K%, Min-K%++, DC-PDD from the same target pass).

The suite scores every text once per model in batches (``core.attacks.membership.scoring``). All three
read the same score functions, and the bench checks that they agree. Models: the demo's
(``python -m core demo build``); texts: the demo's private training speeches and public
speeches, ``--texts`` of them (default 2,000). The disk and memory score caches are off, so
every side computes everything.

    python -m bench.bench_mia [--texts 2000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from core.attacks.membership import scores as ms
from core.attacks.membership.scoring import score_suite
from core.readers.data import read_texts
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


def _prefixed(lm, ids: list[int], prefix_ids: list[int]) -> np.ndarray:
    """ℓ_i of ``ids`` after as many of the prefix's last tokens as the context leaves room for."""
    room = max(0, lm.card.context_length - 1 - len(ids))
    return _logprobs(lm, prefix_ids[max(0, len(prefix_ids) - room):] + ids)[-len(ids):]


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
        extra["prefixed"] = _prefixed(lm, ids, prefix_ids)
    return ms.TextArrays(**(vars(arrays) | extra))


def _all_arrays(lm, reference, text: str, prefix_ids: list[int]) -> ms.TextArrays:
    """Every array of one text, each forward pass once: the target's (log-probs and moments
    from one pass), the reference's, the lowercased text's and the prefixed text's."""
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    logp = _forward(lm, ids)
    p = logp.exp()
    mean = (p * logp).sum(-1)
    lower = lm.tokenizer(text.lower(), add_special_tokens=False)["input_ids"]
    return ms.TextArrays(text, np.array(ids), logp[torch.arange(len(ids)), torch.tensor(ids)]
                         .numpy(), mean.numpy(),
                         (p * (logp - mean[:, None]).square()).sum(-1).numpy(),
                         _logprobs(reference, ids), _logprobs(lm, lower),
                         _prefixed(lm, ids, prefix_ids))


def shared_pass(lm, reference, texts: list[str], settings: ms.ScoreSettings,
                prefix: str) -> dict[str, np.ndarray]:
    """The fair baseline: one text at a time, each of its forward passes shared by the attacks."""
    prefix_ids = lm.tokenizer(prefix, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        rows = [ms.text_scores(_all_arrays(lm, reference, t, prefix_ids), list(ms.ATTACKS),
                               settings) for t in texts]
    return {name: np.array([row[name] for row in rows]) for name in ms.ATTACKS}


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
    seconds = {}
    for name, baseline in (("MIMIR-style (per text, per attack)", mimir_style),
                           ("one pass per text, shared", shared_pass)):
        start = time.perf_counter()
        scores = baseline(lm, reference, texts, settings, prefix)
        seconds[name] = time.perf_counter() - start
        for attack in ms.ATTACKS:
            assert np.allclose(suite[attack], scores[attack], rtol=1e-3, atol=1e-4), (name, attack)
    print(f"{len(texts):,} texts, {len(ms.ATTACKS)} attacks ({', '.join(ms.ATTACKS)}), on "
          f"{lm.device}, {torch.get_num_threads()} threads; the scores agree")
    print(f"  suite (batched, one pass per model):   {suite_s:7.2f} s")
    for name, spent in seconds.items():
        print(f"  {name + ':':38s} {spent:7.2f} s   the suite is {spent / suite_s:.2f}x faster")


if __name__ == "__main__":
    main()
