"""The canary kinds of the DP canary audit (core/dp/canary_kinds.py, Panda et al., ICLR 2025) on
the tiny random GPT-2 of ``canary_audit.tiny_config``: each kind's secrets come from its pool
with the property that makes the kind strong, the seed reproduces them, a new-token run trains
and resumes on its resized model, random_words runs keep their run hash, bad pools get one line."""

import dataclasses
import itertools
import math
import threading
import typing
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from core.dp import canary_audit as ca
from core.dp import canary_kinds as kinds
from core.dp import finetune_data
from core.errors import UserError
from core.models import resolve_model
from core.runtime import Cancelled
from core.scoring import score_token_ids
from ui.render.dp_canary_audit import run_line


def _tiny(**changes) -> ca.DpCanaryAuditConfig:
    return dataclasses.replace(ca.tiny_config(), **changes)


def _planted(config: ca.DpCanaryAuditConfig):
    base = resolve_model(config.model, device="cpu")
    canaries, data, sequences = ca.prepare(config, base)
    prefix = base.tokenizer(kinds.CANARY_PREFIX, add_special_tokens=False).input_ids
    return base, canaries, data, sequences, prefix


@pytest.mark.parametrize("kind", ["new_tokens", "least_likely", "bigram"])
def test_each_kind_draws_distinct_canaries_that_the_seed_reproduces(kind):
    config = _tiny(kind=kind, words=3, least_likely_pool=40)
    _, canaries, _, _, _ = _planted(config)
    _, again, _, _, _ = _planted(config)
    _, other, _, _, _ = _planted(dataclasses.replace(config, seed=1))
    assert len({tuple(row) for row in canaries.secrets.tolist()}) == 100
    assert canaries.secrets.shape == (100, 3) and 30 < canaries.members.sum() < 70
    assert np.array_equal(again.secrets, canaries.secrets)
    assert np.array_equal(again.members, canaries.members)
    assert not np.array_equal(other.members, canaries.members)
    if kind != "new_tokens":   # new tokens: canary i owns ids V0 + 3i…; the seed draws their rows
        assert not np.array_equal(other.secrets, canaries.secrets)


def test_new_token_canaries_own_new_rows_and_only_members_put_them_in_training():
    config = _tiny(kind="new_tokens", words=3)
    base, canaries, data, _, _ = _planted(config)
    first = base.model.get_input_embeddings().num_embeddings
    secrets = canaries.secrets
    assert secrets.min() >= first and len(np.unique(secrets)) == secrets.size == 300
    assert canaries.lm.model.get_input_embeddings().num_embeddings == first + 300
    assert resolve_model(config.model, device="cpu").model.get_input_embeddings(
        ).num_embeddings == first                       # the loaded model is left as it was
    assert set(data.inputs[data.inputs >= first].tolist()) == set(
        secrets[canaries.members].ravel().tolist())
    assert canaries.pool == 300 and canaries.prior_bits == pytest.approx(3 * math.log2(300))

    def new_rows(seed):
        lm = kinds.with_new_tokens(base, 300, seed)
        return lm.model.get_input_embeddings().weight[first:]

    assert torch.equal(new_rows(0), canaries.lm.model.get_input_embeddings().weight[first:])
    assert not torch.equal(new_rows(1), new_rows(0))


def test_a_new_token_run_learns_its_members_and_resumes_on_the_resized_model():
    config = _tiny(kind="new_tokens", sigma=0.0, steps=40, checkpoint_every=20)
    cancel = threading.Event()

    def stop_at_step_twenty(fraction, message="", partial=None):
        if "step 20/" in message:
            cancel.set()

    with pytest.raises(Cancelled):
        ca.run(config, progress=stop_at_step_twenty, cancel=cancel)
    result = ca.run(config)
    assert result.training.resumed_from_step == 20 and result.training.steps[-1] == 40
    assert result.auroc > 0.9 and result.epsilon_lower > 0
    again = ca.run(config)   # finished: re-scored on the same start model and checkpoint
    assert again.training.resumed_from_step == 40
    assert [c.logp_start for c in again.canaries] == pytest.approx(
        [c.logp_start for c in result.canaries], abs=1e-5)
    assert [c.score for c in again.canaries] == pytest.approx(
        [c.score for c in result.canaries], abs=1e-4)


def test_least_likely_secrets_are_the_start_models_least_likely_tokens_after_the_prefix():
    config = _tiny(kind="least_likely", least_likely_pool=40, words=4)
    base, canaries, _, _, prefix = _planted(config)
    tokenizer = base.tokenizer
    pool = kinds.least_likely_tokens(base, prefix, 40)
    eligible = kinds.self_encoding_tokens(tokenizer).tolist()
    scored = score_token_ids(base, [prefix + [t] for t in eligible])   # the scoring engine
    logp = {t: s.logprobs[-1] for t, s in zip(eligible, scored)}
    rest = set(eligible) - set(pool.tolist())
    assert max(logp[t] for t in pool.tolist()) <= min(logp[t] for t in rest) + 1e-4
    assert not set(pool.tolist()) & set(tokenizer.all_special_ids)
    assert all(tokenizer(tokenizer.decode([t]), add_special_tokens=False).input_ids == [t]
               for t in pool.tolist())
    assert set(canaries.secrets.ravel().tolist()) <= set(pool.tolist())
    assert canaries.pool == 40 and canaries.prior_bits == pytest.approx(4 * math.log2(40))


def test_bigram_canaries_hold_no_pair_the_corpus_holds_and_count_their_sequences():
    config = _tiny(kind="bigram", words=3)
    base, canaries, _, sequences, prefix = _planted(config)
    corpus, _ = kinds.corpus_records(ca.finetune_plan(config), base.tokenizer)
    pairs = {pair for record in corpus for pair in zip(record, record[1:])}
    for sequence in sequences:
        secret = sequence[len(prefix) - 1:]    # from the prefix's last token
        assert not set(zip(secret, secret[1:])) & pairs
    corpus_tokens = {t for record in corpus for t in record}
    assert set(canaries.secrets.ravel().tolist()) <= corpus_tokens
    pool = sorted(corpus_tokens & set(kinds.self_encoding_tokens(base.tokenizer).tolist()))
    allowed = sum(not set(zip((prefix[-1], *row), row)) & pairs
                  for row in itertools.product(pool, repeat=3))
    assert canaries.pool == len(pool) and canaries.prior_bits == pytest.approx(math.log2(allowed))


def test_a_random_words_run_keeps_the_run_hash_it_had_before_there_were_kinds(monkeypatch):
    monkeypatch.setattr(finetune_data, "data_fingerprint", lambda source: "pinned-corpus")
    base = SimpleNamespace(identity="pinned-identity")
    demo = ca.DpCanaryAuditConfig(model="demo:base", corpus=("demo:private_train",
                                                             "demo:public_train"))
    other = ca.DpCanaryAuditConfig(model="demo:base", corpus=("c.txt",), sigma=0.5, canaries=200,
                                   words=4, seed=3, validation="v.txt")
    # the values of the code before the kinds (git show HEAD:core/dp/canary_audit.py, bb62ce4)
    assert ca.run_hash(demo, base) == "57419af73e8eaf46"
    assert ca.run_hash(other, base) == "4c8430fdf0a600a5"
    assert ca.run_hash(dataclasses.replace(demo, least_likely_pool=7), base) == "57419af73e8eaf46"
    assert ca.run_hash(dataclasses.replace(demo, precision="bf16-mixed"), base) != "57419af73e8eaf46"
    by_kind = {ca.run_hash(dataclasses.replace(demo, kind=kind), base)
               for kind in typing.get_args(kinds.Kind)}
    assert len(by_kind) == 4
    least = dataclasses.replace(demo, kind="least_likely")
    assert ca.run_hash(least, base) != ca.run_hash(
        dataclasses.replace(least, least_likely_pool=7), base)


def test_the_run_line_names_the_kind():
    result = ca.run(_tiny(kind="bigram", sigma=0.0, steps=4))
    assert result.config.kind == "bigram" and result.canaries[0].words
    line = run_line(result)
    assert f"{len(result.canaries)} bigram canaries" in line
    assert f"of {result.vocabulary} corpus tokens: {result.prior_bits:.1f} bits" in line


@pytest.mark.parametrize("changes, message", [
    ({"kind": "least_likely", "least_likely_pool": 5000},
     "the least-likely pool must be at most"),
    ({"kind": "least_likely", "least_likely_pool": 5, "words": 2},
     "5 tokens make 25 canaries of 2 tokens, fewer than 100: use more words"),
    ({"kind": "bigram", "words": 2, "canaries": 10_000},
     "canaries of 2 tokens without a corpus bigram, fewer than 10,000: use more words"),
])
def test_a_pool_too_small_for_the_canaries_is_refused_in_one_line(changes, message):
    with pytest.raises(UserError, match=message) as error:
        ca.run(_tiny(**changes))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("changes, message", [
    ({"kind": "digits"}, "choose one of random_words, new_tokens, least_likely, bigram"),
    ({"least_likely_pool": 1}, "least-likely pool must be from 2 to 1,000,000"),
    # the red team's 100,000 new_tokens canaries passed 5 GB in 30 s
    ({"kind": "new_tokens", "canaries": 100_000},
     "new_tokens adds m·k = 600,000 tokens to the vocabulary: at most 32,768 \\(m up to 5,461"),
])
def test_bad_kind_settings_are_refused_with_their_range(changes, message):
    with pytest.raises(UserError, match=message):
        ca.DpCanaryAuditConfig(**{"model": "m", "corpus": ("c.txt",)} | changes)
