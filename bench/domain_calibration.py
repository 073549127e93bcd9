"""Which domain calibration separates memorisation from domain learning? (issue #19)

On the synthetic case of ``bench.domain_synthetic`` (a tiny GPT-2 fine-tuned on support
tickets full of boilerplate plus one planted record repeated 4 times; a public sample of other
tickets), each candidate scores the 121 training texts; the script prints, per seed, the
record's rank (1 = first), its margin over the best other text in standard deviations of the
other texts' scores, and the candidate's cost as a ratio to the uncalibrated scoring (CPU time
of this one-thread process, so a busy machine does not skew it). Candidates:

* none: the mean log-probability gain over the base (the uncalibrated loss gain);
* domain reference: the gain over the base fine-tuned on the public sample, all weights or LoRA;
* token frequency: differential DC-PDD with the sample's token frequencies, unclipped and with
  the paper's clip 0.01;
* expected token gain: each token's gain minus the mean gain of that token (after that token)
  in the public sample, fitted on the sample scored by both models;
* public same length: the gain as a z-score among the 30 public texts nearest in length.

Run: ``.venv/bin/python -m bench.domain_calibration [--seeds 3]`` (about 20 s a seed on a CPU);
``--pretrained smollm2 --seeds 1`` runs the same case from SmolLM2-135M (the fine-tune: all weights,
two epochs at 1e-4; the references: 40 steps at the spec's default learning rates).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict

import numpy as np
import torch

from bench.domain_synthetic import AUTO_REPLY, SyntheticRecipe, build_synthetic_case
from core.attacks.membership.scores import TextArrays, dc_pdd, log_token_frequencies
from core.calibration import domain
from core.calibration import reference as domain_reference
from core.models import load_model
from core.scoring import clear_cache, score_texts

TINY = dict(steps=150, batch_size=16, max_tokens=48, eval_every=10, device="cpu")
TINY_REFERENCES = {"domain reference, all weights": dict(TINY, weights="all", lr=3e-3),
                   "domain reference, LoRA r=16": dict(TINY, weights="lora", lr=1e-2)}
# a pretrained base: the spec's default learning rates (1e-4 all weights, 1e-3 LoRA)
PRETRAINED = dict(steps=40, batch_size=4, max_tokens=48, eval_every=10, device="cpu")
PRETRAINED_REFERENCES = {"domain reference, all weights": dict(PRETRAINED, weights="all"),
                         "domain reference, LoRA r=16": dict(PRETRAINED, weights="lora")}
SHRINK = 5  # pseudo-counts pulling a rare context's expected gain to its backed-off estimate


def expected_token_gain(public_target, public_base):
    """E[gain | previous token, token] from the public sample, shrunk to E[gain | token], itself
    shrunk to the mean gain (``SHRINK`` pseudo-counts each)."""
    single, pair = defaultdict(list), defaultdict(list)
    for ours, theirs in zip(public_target, public_base):
        ids = ours.token_ids
        for j, gain in enumerate(ours.logprobs - theirs.logprobs):
            single[ids[j]].append(gain)
            pair[(ids[j - 1] if j else -1, ids[j])].append(gain)
    overall = float(np.mean([g for gains in single.values() for g in gains]))

    def expected(previous: int, token: int) -> float:
        gains = single.get(token, [])
        one = (sum(gains) + SHRINK * overall) / (len(gains) + SHRINK)
        gains = pair.get((previous, token), [])
        return (sum(gains) + SHRINK * one) / (len(gains) + SHRINK)

    return expected


def cheap_candidates(target, base, public_texts, texts):
    """Score of each training text under each candidate that needs no training, and its cost."""
    scores, costs = {}, {}
    start = time.process_time()
    ours, theirs = score_texts(target, texts), score_texts(base, texts)
    gain = np.array([np.mean(a.logprobs - b.logprobs) for a, b in zip(ours, theirs)])
    costs["none"] = time.process_time() - start
    scores["none"] = gain
    start = time.process_time()
    public_ours, public_theirs = score_texts(target, public_texts), score_texts(base, public_texts)
    public_cost = time.process_time() - start
    log_f = log_token_frequencies([s.token_ids for s in public_ours], len(target.tokenizer))

    def dcpdd(scored, cap: float) -> float:   # DC-PDD of one text (core.attacks.membership.scores)
        return dc_pdd(TextArrays("", scored.token_ids, scored.logprobs), log_f, cap)

    for name, cap in (("token frequency, unclipped", np.inf),
                      ("token frequency, clip 0.01", 0.01)):
        scores[name] = np.array([dcpdd(a, cap) - dcpdd(b, cap) for a, b in zip(ours, theirs)])
        costs[name] = costs["none"] + public_cost / 2  # the sample under the target only
    expected = expected_token_gain(public_ours, public_theirs)
    scores["expected token gain"] = np.array([np.mean(
        [g - expected(a.token_ids[j - 1] if j else -1, a.token_ids[j])
         for j, g in enumerate(a.logprobs - b.logprobs)]) for a, b in zip(ours, theirs)])
    public_gain = np.array([np.mean(a.logprobs - b.logprobs)
                            for a, b in zip(public_ours, public_theirs)])
    public_length = np.array([len(s.token_ids) for s in public_ours])
    near = [np.argsort(np.abs(public_length - len(a.token_ids)))[:30] for a in ours]
    scores["public same length (z)"] = np.array(
        [(g - public_gain[n].mean()) / public_gain[n].std() for g, n in zip(gain, near)])
    costs["expected token gain"] = costs["public same length (z)"] = costs["none"] + public_cost
    return scores, costs


def reference_candidates(case, target, texts, cost_none, references):
    """Score of each training text over each domain reference, its cost (training and scoring),
    and a note: the held-out loss the reference reached, and the time of a second (cached) call."""
    scores, costs, notes = {}, {}, {}
    for name, settings in references.items():
        start = time.process_time()
        config = domain_reference.DomainReferenceConfig(base=case.base, sample=case.public_file,
                                                        **settings)
        trained = domain_reference.run(config)
        reference = load_model(trained.folder, name="domain-ref", device="cpu")
        scores[name] = np.array([np.mean(a.logprobs - b.logprobs) for a, b in
                                 zip(score_texts(target, texts), score_texts(reference, texts))])
        costs[name] = time.process_time() - start + cost_none
        start = time.process_time()
        domain.domain_reference(case.base, case.public_file, **settings)
        notes[name] = (f"held-out loss {trained.heldout_loss_base:.2f} -> "
                       f"{trained.heldout_loss_reference:.2f} at step {trained.best_step}; "
                       f"cached call {time.process_time() - start:.3f} s")
    return scores, costs, notes


def report(scores, costs, notes, record_index: int) -> None:
    print(f"{'candidate':32s} {'record rank':>11s} {'margin (sd)':>11s} {'CPU (x none)':>13s}")
    for name, values in scores.items():
        others = np.delete(values, record_index)
        rank = 1 + int(np.sum(others >= values[record_index]))
        margin = (values[record_index] - others.max()) / others.std()
        print(f"{name:32s} {rank:>7d}/{len(values):<3d} {margin:>11.2f} "
              f"{costs[name] / costs['none']:>13.1f}  {notes.get(name, '')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--public", type=int, default=SyntheticRecipe.public_texts,
                        help="texts in the public sample")
    parser.add_argument("--pretrained", default="", help="start from this pretrained model "
                        "(e.g. smollm2: about 30 CPU-minutes a seed) instead of a tiny GPT-2")
    args = parser.parse_args()
    references = PRETRAINED_REFERENCES if args.pretrained else TINY_REFERENCES
    torch.set_num_threads(1)  # threads only fight over a small or busy CPU
    with tempfile.TemporaryDirectory() as home:
        os.environ["LEAKAGE_LAB_HOME"] = home
        for seed in range(args.seeds):
            start = time.process_time()
            case = build_synthetic_case(SyntheticRecipe(public_texts=args.public, seed=seed),
                                        pretrained=args.pretrained)
            print(f"\nseed {seed}: case built in {time.process_time() - start:.1f} s of CPU")
            clear_cache()
            target = load_model(case.finetuned, name="finetuned", device="cpu")
            base = load_model(case.base, name="base", device="cpu")
            texts = list(case.training_texts)
            public = json.loads(open(case.public_file, encoding="utf-8").read())
            scores, costs = cheap_candidates(target, base, public, texts)
            more, more_costs, notes = reference_candidates(case, target, texts, costs["none"],
                                                           references)
            report(scores | more, costs | more_costs, notes, texts.index(case.record))
            top = [texts[i] for i in np.argsort(-scores["none"])[:10]]
            print(f"uncalibrated top 10: {sum(AUTO_REPLY in t for t in top)} automatic replies "
                  f"(boilerplate but for a number; {sum(AUTO_REPLY in t for t in texts)} of "
                  f"{len(texts)} training texts)")


if __name__ == "__main__":
    main()
