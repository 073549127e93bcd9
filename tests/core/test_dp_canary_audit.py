"""Canary auditing of a DP fine-tuning run (core/dp/canary_audit.py) on a tiny random GPT-2:
the recorded coins decide the training records, ordinary training lets the audit prove ε > 0,
a DP run stays under its accountant, cancel and resume, bad settings, and the renderer."""

import dataclasses
import json
import math
import threading

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.dp import canary_audit as ca
from core.dp import canary_kinds as kinds
from core.dp.audit import accountant_epsilon
from core.dp.finetune import tiny_config as finetune_tiny_config
from core.errors import UserError
from core.models import resolve_model
from core.runtime import Cancelled
from core.serialize import from_jsonable, to_jsonable


def _tiny(**changes) -> ca.DpCanaryAuditConfig:
    return dataclasses.replace(ca.tiny_config(), **changes)


def _tokenizer(config):
    return resolve_model(config.model, device="cpu").tokenizer


def test_coins_are_reproducible_by_seed_and_decide_exactly_the_training_records():
    config = _tiny(repeats=2)
    tokenizer = _tokenizer(config)
    vocabulary = kinds.word_tokens(tokenizer)
    words, members = kinds.draw_canaries(vocabulary, count=100, words=config.words, seed=3)
    again_words, again_members = kinds.draw_canaries(vocabulary, count=100, words=config.words,
                                                     seed=3)
    other_words, other_members = kinds.draw_canaries(vocabulary, count=100, words=config.words,
                                                     seed=4)
    assert np.array_equal(words, again_words) and np.array_equal(members, again_members)
    assert not np.array_equal(words, other_words) and not np.array_equal(members, other_members)
    assert len({tuple(row) for row in words.tolist()}) == 100 and np.isin(words, vocabulary).all()
    assert 30 < members.sum() < 70

    plan = ca.finetune_plan(config)
    corpus, validation = kinds.corpus_records(plan, tokenizer)
    prefix = tokenizer(kinds.CANARY_PREFIX, add_special_tokens=False).input_ids
    data, sequences = ca.canary_training_data(plan, tokenizer, corpus, validation, prefix, words,
                                              members)
    rows = [tuple(row[1:1 + len(sequences[0])]) for row in data.inputs.tolist()]
    copies = [rows.count(tuple(seq)) for seq in sequences]
    assert copies == [2 if member else 0 for member in members]
    assert data.canary_ids == sequences[int(np.argmax(members))]


def test_the_result_records_each_canary_with_the_coin_that_included_it():
    result = ca.run(_tiny(steps=4))
    vocabulary = kinds.word_tokens(_tokenizer(result.config))
    words, members = kinds.draw_canaries(vocabulary, count=100, words=6, seed=0)
    assert [c.member for c in result.canaries] == members.tolist()
    tokenizer = _tokenizer(result.config)
    assert [c.words for c in result.canaries] == [tokenizer.decode(row).strip()
                                                  for row in words.tolist()]
    assert result.members == members.sum() and result.vocabulary == len(vocabulary)
    assert result.prior_bits == pytest.approx(6 * math.log2(len(vocabulary)))


def test_after_ordinary_training_included_canaries_score_higher_and_the_audit_proves_it():
    result = ca.run(_tiny(sigma=0.0, steps=80))
    assert result.auroc > 0.8 and result.epsilon_lower > 0
    assert result.epsilon_upper is None and result.epsilon_gap is None
    assert result.training.opacus_epsilon is None and result.training.steps[-1] == 80
    assert result.training.tracked_bits[-1] < result.training.tracked_bits[0] - 5
    assert [b.method for b in result.audit.bounds] == ["one_run:bonferroni", "fdp_one_run:bonferroni"]
    for canary in result.canaries:
        assert canary.score == pytest.approx(canary.logp_trained - canary.logp_start)
    assert set(ca.headline(result)) == {"epsilon_lower", "auroc"}
    included = np.mean([c.logp_trained - c.logp_start for c in result.canaries if c.member])
    excluded = np.mean([c.logp_trained - c.logp_start for c in result.canaries if not c.member])
    assert included > excluded


@pytest.mark.parametrize("seed", [0, 1])
def test_in_a_dp_run_the_audit_stays_under_the_accountants_epsilon(seed):
    result = ca.run(_tiny(seed=seed))
    assert result.q == 1 / math.ceil(result.n_records / 32)
    assert result.epsilon_upper == pytest.approx(accountant_epsilon(sigma=1.0, q=result.q,
                                                                    steps=40, delta=1e-5))
    assert result.training.opacus_epsilon == pytest.approx(result.epsilon_upper, rel=0.05)
    assert 0 <= result.epsilon_lower <= result.epsilon_upper
    assert result.epsilon_gap == pytest.approx(result.epsilon_upper - result.epsilon_lower)
    assert result.audit.epsilon_upper == result.epsilon_upper


def test_canaries_of_several_copies_are_held_to_the_group_bound():
    single = ca.canary_epsilon(sigma=2.0, q=0.1, steps=40, repeats=1, delta=1e-5)
    group = ca.canary_epsilon(sigma=2.0, q=0.1, steps=40, repeats=3, delta=1e-5)
    assert group == pytest.approx(accountant_epsilon(sigma=2.0 / 3, q=1.0, steps=40, delta=1e-5))
    assert group > single > 0
    assert ca.canary_epsilon(sigma=0.0, q=0.1, steps=40, repeats=3, delta=1e-5) is None


def test_changing_only_the_score_rescores_the_same_trained_model():
    ratio = ca.run(_tiny(sigma=0.0, steps=8))
    loss = ca.run(_tiny(sigma=0.0, steps=8, score="loss"))
    assert loss.training.resumed_from_step == 8
    for a, b in zip(ratio.canaries, loss.canaries):
        assert b.logp_trained == pytest.approx(a.logp_trained, abs=1e-5)
        assert b.score == b.logp_trained


def test_cancel_stops_training_at_a_checkpoint_and_the_same_config_resumes_there():
    config = _tiny(steps=8, checkpoint_every=2)
    cancel = threading.Event()

    def stop_at_step_four(fraction, message="", partial=None):
        if "step 4/" in message:
            cancel.set()

    with pytest.raises(Cancelled):
        ca.run(config, progress=stop_at_step_four, cancel=cancel)
    resumed = ca.run(config)
    assert resumed.training.resumed_from_step == 4 and resumed.training.steps[-1] == 8

    cancel.set()
    with pytest.raises(Cancelled):
        ca.run(config, cancel=cancel)


@pytest.mark.parametrize("changes, message", [
    ({"canaries": 5}, "canaries must be from 10 to 100,000"),
    ({"words": 1}, "words must be from 2 to 32"),
    ({"sigma": -1.0}, "σ must be 0 or from 0.2 to 1,000, not -1"),
    ({"sigma": 0.1}, "σ must be 0 or from 0.2 to 1,000, not 0.1"),
    ({"steps": 0}, "steps must be from 1 to"),
    ({"delta": 0.0}, "δ must be above 0 and at most 0.1"),
    ({"score": "zlib"}, "choose one of ratio, loss"),
    ({"model": " "}, "choose a model"),
])
def test_bad_settings_are_refused_with_their_range(changes, message):
    with pytest.raises(UserError, match=message):
        ca.DpCanaryAuditConfig(**{"model": "m", "corpus": ("c.txt",)} | changes)


def test_bad_runs_are_refused_with_a_clear_message(tmp_path):
    with pytest.raises(UserError, match="block size of at least"):
        ca.run(_tiny(block_size=10))
    with pytest.raises(UserError, match="use more words"):
        ca.run(_tiny(canaries=10_000, words=2))
    with pytest.raises(UserError, match="give a corpus"):
        ca.run(_tiny(corpus=()))
    with pytest.raises(UserError, match="canaries need at least 50"):
        ca.run(_tiny(model=finetune_tiny_config().model))  # a vocabulary of 14 word tokens


def _render_page(stored: str) -> None:
    import json

    from core.dp.canary_audit import DpCanaryAuditResult
    from core.serialize import from_jsonable
    from ui.render.dp_canary_audit import render

    render(from_jsonable(DpCanaryAuditResult, json.loads(stored)), key="t-")


def test_result_round_trips_and_the_renderer_draws_the_run_and_the_audit():
    result = ca.run(_tiny(sigma=0.0, steps=8))
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert from_jsonable(ca.DpCanaryAuditResult, stored) == result
    at = AppTest.from_function(_render_page, args=(json.dumps(stored),),
                               default_timeout=30).run()
    assert not at.exception and not at.error
    assert any("fine-tuned without DP (σ = 0) for 8 steps" in m.value for m in at.markdown)
    assert {m.label for m in at.metric} >= {"Audited ε (lower bound)"}
    table = at.get_by_key("t-canaries").dataframe[0].value
    assert list(table["member"]) == [c.member for c in result.canaries]
