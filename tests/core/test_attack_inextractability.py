"""Memorisation in bits: (l, b)-inextractability against the reference code's own Algorithms 2
and 3 (golden values, tests/support/golden/make_inextractability.py), the spec against a brute-force
computation from the tiny model's logits, probabilistic extraction's p_z and n, and bad input."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from core.__main__ import main
from core.attacks.inextractability import spec as ix
from core.attacks.inextractability import probabilistic as pe
from core.errors import UserError
from core.models import resolve_model
from core.scoring import Sampler, context_ids

GOLDEN = json.loads((Path(__file__).parents[1] / "support" / "golden" / "inextractability.json").read_text())


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"l{c['l']}-m{c['m']}")
def test_window_bits_and_greedy_counts_match_the_reference_algorithms(case):
    ref, l, m = case["reference"], case["l"], case["m"]
    best = (math.inf, None, None)
    extractable = total = 0
    for i, text in enumerate(case["texts"]):
        bits = ix.window_bits(np.array(text["ranks"]), np.array(text["logprobs"]), l, m)
        greedy = ix.greedy_windows(np.array(text["ranks"]), l)
        if ref["per_sequence_b"][i] is None:
            assert len(bits) == 0 and greedy == 0
            continue
        start = int(np.argmin(bits))
        assert bits[start] == pytest.approx(ref["per_sequence_b"][i], abs=1e-9)
        assert [start + 1, start + l] == ref["per_sequence_span"][i]
        assert greedy == ref["per_sequence_extractable"][i]
        extractable, total = extractable + greedy, total + len(bits)
        if bits[start] < best[0]:
            best = (bits[start], i, start)
    assert best[0] == pytest.approx(ref["b"], abs=1e-9) and best[1] == ref["worst_seq"]
    assert 2.0 ** -best[0] == pytest.approx(ref["p_star"], rel=1e-9)
    assert extractable / total == pytest.approx(ref["eta"], abs=1e-12)
    assert total == ref["n_total"]


def _brute_force(model_dir: str, ids: list[int], sampler: Sampler):
    """Each token's rank (argsort, as the reference's utils do), log-prob and its density under
    ``sampler``, from the full softmax in numpy (no engine code), after the context token."""
    lm = resolve_model(model_dir, device="cpu")
    full = context_ids(lm.tokenizer) + ids
    with torch.no_grad():
        logits = lm.model(torch.tensor([full])).logits[0, :-1].double().numpy()
    rows = np.arange(len(ids))
    order = np.argsort(-logits, axis=1, kind="stable")
    ranks = np.argmax(order == np.array(ids)[:, None], axis=1) + 1
    logp = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - logits.max(1, keepdims=True)
    tempered = logits / sampler.temperature
    probs = np.exp(tempered - tempered.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    keep = np.ones_like(probs, dtype=bool)
    if sampler.top_k:
        keep &= tempered >= np.sort(tempered, axis=1)[:, -sampler.top_k][:, None]
    probs = np.where(keep, probs, 0.0) / np.where(keep, probs, 0.0).sum(1, keepdims=True)
    if sampler.top_p:
        for row in rows:
            mass = 0.0
            for token in np.argsort(-probs[row], kind="stable"):
                if mass >= sampler.top_p:
                    keep[row, token] = False
                mass += probs[row, token]
        probs = np.where(keep, probs, 0.0) / np.where(keep, probs, 0.0).sum(1, keepdims=True)
    with np.errstate(divide="ignore"):   # log 0 = −inf outside top-k / top-p
        return ranks, logp[rows, ids], np.log(probs[rows, ids])


@pytest.mark.parametrize("top_k, top_p, finite", [(0, 0.97, 3), (250, 0.97, 1), (50, 0.9, 0)])
def test_the_spec_matches_a_brute_force_computation_on_the_tiny_model(top_k, top_p, finite):
    config = dataclasses.replace(ix.tiny_config(), temperature=0.7, top_k=top_k, top_p=top_p,
                                 rank_threshold=5)
    result = ix.run(config)
    tokenizer = resolve_model(config.model, device="cpu").tokenizer
    expected = {}
    for i, text in enumerate(config.texts):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        ranks, logp, sampled = _brute_force(config.model, ids, config.sampler)
        costs = [sum(math.log2(r) if r <= 5 else -lp / math.log(2)
                     for r, lp in zip(ranks[s:s + 4], logp[s:s + 4])) for s in range(len(ids) - 3)]
        start = int(np.argmin(costs))
        expected[i] = (costs[start], start, sampled[start:start + 4].sum() / math.log(2))
    assert result.texts == 3 and result.windows == sum(len(tokenizer(t)["input_ids"]) - 3
                                                       for t in config.texts)
    for record in result.records:
        b, start, log2_p = expected[record.record]
        assert record.b == pytest.approx(b, abs=1e-4) and record.start == start
        assert record.log2_p == pytest.approx(log2_p, abs=1e-3)
    assert result.b == pytest.approx(min(e[0] for e in expected.values()), abs=1e-4)
    assert [r.b for r in result.records] == sorted(r.b for r in result.records)
    assert sum(math.isfinite(r.log2_p) for r in result.records) >= finite   # inside the nucleus


def test_pairs_p_z_and_samples_needed_match_brute_force():
    config = dataclasses.replace(ix.tiny_config(), temperature=1.5, top_k=100)
    pair, = ix.run(config).pairs
    tokenizer = resolve_model(config.model, device="cpu").tokenizer
    prefix = tokenizer("my pin is", add_special_tokens=False)["input_ids"]
    suffix = tokenizer(" 4242", add_special_tokens=False)["input_ids"]
    ranks, logp, sampled = _brute_force(config.model, prefix + suffix, config.sampler)
    n = len(suffix)
    assert pair.suffix_tokens == n
    assert pair.log2_p == pytest.approx(sampled[-n:].sum() / math.log(2), abs=1e-3)
    assert pair.log2_p_model == pytest.approx(logp[-n:].sum() / math.log(2), abs=1e-3)
    assert pair.b == pytest.approx(sum(math.log2(r) if r <= 20 else -lp / math.log(2)
                                       for r, lp in zip(ranks[-n:], logp[-n:])), abs=1e-3)
    assert pair.max_rank == ranks[-n:].max()
    helper, = pe.extraction_probability(resolve_model(config.model, device="cpu"), ["my pin is"],
                                        [" 4242"], config.sampler)   # what extraction can call
    assert (helper.log2_p, helper.samples_50) == (pair.log2_p, pair.samples_50)


@pytest.mark.parametrize("p", [0.9, 0.5, 0.3, 0.01, 1e-4])
def test_samples_needed_is_the_least_n_found_with_probability_one_half(p):
    n = 1
    while 1 - (1 - p) ** n < 0.5:
        n += 1
    assert pe.samples_needed(math.log(p)) == n
    assert pe.discovery_probability(math.log(p), n) >= 0.5 > pe.discovery_probability(math.log(p),
                                                                                      n - 1)
    assert pe.samples_needed(0.0) == 1 and pe.samples_needed(-math.inf) == math.inf


def test_the_dp_bound_for_b_bits_comes_from_the_bound_explorer():
    from core.bounds.summary import summarize

    config = dataclasses.replace(ix.tiny_config(), sigma=1.0, q=0.01, steps=1000)
    result = ix.run(config)
    assert result.dp_bound_bits == pytest.approx(summarize(
        sigma=1.0, q=0.01, steps=1000, bits=result.b, delta=1e-5).leakage_bits)
    assert result.pairs[0].dp_bound_bits == pytest.approx(summarize(
        sigma=1.0, q=0.01, steps=1000, bits=result.pairs[0].b, delta=1e-5).leakage_bits)
    assert ix.run(ix.tiny_config()).dp_bound_bits is None


def test_a_reference_gives_each_pair_its_prior_the_bits_learnt_and_the_bound_of_that_prior():
    """learnt = log2 p_target − log2 p_reference of the suffix, each model's own log2 p from
    the command run on it alone; L(p0) of the prior from the Bound Explorer; a reference with
    another tokenizer is refused in one line."""
    from core.attacks.inextractability.prior import exceeds
    from core.bounds.training_run import leakage_bits
    from core.models.tiny import tiny_random_models

    config = ix.tiny_config()
    [other] = [m for m in tiny_random_models(list(ix.TINY_TEXTS) * 4,
                                             ("tiny-inextractability", "tiny-prior"),
                                             vocab_size=280) if m.endswith("tiny-prior")]
    run = dataclasses.replace(config, reference=other, sigma=1.0, q=0.01, steps=1000)
    [pair] = ix.run(run).pairs
    [alone] = ix.run(dataclasses.replace(config, model=other)).pairs
    assert pair.log2_p_reference == pytest.approx(alone.log2_p_model)
    assert pair.learnt_bits == pytest.approx(pair.log2_p_model - alone.log2_p_model)
    assert pair.prior_bound_bits == pytest.approx(leakage_bits(1.0, 0.01, 1000,
                                                               -alone.log2_p_model))
    assert exceeds(pair) == (pair.learnt_bits > pair.prior_bound_bits)
    assert ix.run(dataclasses.replace(run, sigma=0.0)).pairs[0].prior_bound_bits is None
    [foreign] = tiny_random_models(["entirely different words here"] * 8, ("tiny-foreign",),
                                   vocab_size=120)
    with pytest.raises(UserError, match="different tokenizers"):
        ix.run(dataclasses.replace(config, reference=foreign))


def test_bad_input_gets_one_line(tmp_path):
    base = ix.tiny_config()
    with pytest.raises(UserError, match="no text has a window of 400 tokens"):
        ix.run(dataclasses.replace(base, window=400))
    with pytest.raises(UserError, match="give texts to measure"):
        dataclasses.replace(base, texts=(), suffixes=(), prefixes=())
    with pytest.raises(UserError, match="one prefix per suffix"):
        dataclasses.replace(base, prefixes=("a", "b"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(UserError, match="holds no text"):
        ix.run(dataclasses.replace(base, corpus=str(empty)))


def test_cli_json_runs_the_spec(capsys):
    config = ix.tiny_config()
    main(["inextractability", "--model", config.model, "--text", *config.texts, "--l", "4",
          "--prefix", "my pin is", "--suffix", " 4242", "--device", "cpu", "--json", "--no-record"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["b"] == pytest.approx(ix.run(config).b) and out["pairs"][0]["suffix"] == " 4242"


def test_demo_preset_lists_the_canaries_by_copies_then_the_secret_beside_the_bound(demo_home,
                                                                                   capsys):
    from core.demo.paths import load_manifest

    main(["inextractability", "--preset", "demo", "--window", "4", "--sigma", "1", "--json",
          "--no-record"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    manifest = load_manifest()
    canaries = [c.phrase for c in sorted(manifest.canaries, key=lambda c: -c.count)]
    phrases, after_first_word = out["pairs"][:len(canaries)], out["pairs"][len(canaries):-1]
    assert [p["suffix"] for p in phrases] == canaries and all(not p["prefix"] for p in phrases)
    assert [p["prefix"] + p["suffix"] for p in after_first_word] == canaries
    secret = out["pairs"][-1]
    assert secret["prefix"] == manifest.secret.prompt
    assert secret["prefix"] + secret["suffix"] == manifest.secret.sentence
    # the build's own check: log p(secret) − log p(prompt), scored whole (natural log)
    assert secret["log2_p_model"] == pytest.approx(
        manifest.checks.updated.secret_digits_logprob / math.log(2), abs=1e-3)
    assert secret["dp_bound_bits"] is not None and out["dp_bound_bits"] is not None
    # the preset's prior: demo:base, the build's check of the digits under it
    assert secret["log2_p_reference"] == pytest.approx(
        manifest.checks.base.secret_digits_logprob / math.log(2), abs=1e-3)
    learnt = secret["log2_p_model"] - secret["log2_p_reference"]
    assert secret["learnt_bits"] == pytest.approx(learnt) and learnt > secret["prior_bound_bits"]
    assert out["texts"] > 0 and 0 <= out["greedy_fraction"] <= 1
