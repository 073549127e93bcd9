"""Membership inference suite: each score against a hand computation, the engine's moments
against the model's own logits, ReCaLL against two explicit scorings, one scoring pass per
model, data validation, the blind baseline and the spec on the tiny models and tiny demo."""

import dataclasses
import json
import math
import shutil
from collections import Counter

import numpy as np
import pytest
import torch

from core.attacks.membership import mia
from core.attacks.membership import scores as ms
from core.attacks.membership.blind import blind_scores, blind_warning
from core.attacks.membership.data import parse_labelled
from core.attacks.membership.scoring import score_suite
from core.errors import UserError
from core.models import resolve_model
from core.models.tiny import tiny_random_models
from core.scoring import Moment, clear_cache, context_ids, score_texts, score_under_samplers
from core.scoring import engine


def test_min_k_and_min_k_plus_plus_follow_their_formulas():
    logprobs = np.array([-0.1, -3.0, -0.5, -7.0, -2.0])
    mean = np.array([-1.0, -2.0, -1.5, -2.5, -1.0])
    variance = np.array([1.0, 4.0, 0.25, 9.0, 1.0])
    arrays = ms.TextArrays("x", np.arange(5), logprobs, mean, variance)
    assert ms.min_k(arrays, 0.4) == pytest.approx((-7.0 - 3.0) / 2)   # ⌈0.4·5⌉ = 2 lowest
    standardised = (logprobs - mean) / np.sqrt(variance)               # 0.9,-0.5,2,-1.5,-1
    assert ms.min_k_plus_plus(arrays, 0.6) == pytest.approx((-1.5 - 1.0 - 0.5) / 3)
    assert ms.min_k(arrays, 1.0) == pytest.approx(logprobs.mean())
    assert ms.min_k_plus_plus(arrays, 0.01) == pytest.approx(standardised.min())


def test_dc_pdd_caps_each_first_occurrence_and_uses_laplace_frequencies():
    log_f = ms.log_token_frequencies([np.array([0, 0, 1]), np.array([0, 2])], vocab_size=4)
    assert np.exp(log_f) == pytest.approx(np.array([4, 2, 2, 1]) / (5 + 4))
    ids = np.array([1, 3, 1, 0])
    logprobs = np.log(np.array([0.5, 0.001, 0.9, 0.2]))
    arrays = ms.TextArrays("x", ids, logprobs)
    alpha = [min(-0.5 * log_f[1], 0.3), min(-0.001 * log_f[3], 0.3), min(-0.2 * log_f[0], 0.3)]
    assert ms.dc_pdd(arrays, log_f, cap=0.3) == pytest.approx(np.mean(alpha))   # the 2nd "1" skipped
    assert ms.dc_pdd(arrays, log_f, cap=1e-4) == pytest.approx(1e-4)


def test_engine_moments_are_the_mean_and_variance_of_log_p_under_the_model(tiny_lm_dir):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    text = "To be, or not to be, that is the question."
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    plain, mean, variance = score_under_samplers(lm, [ids], [None, Moment("mean"),
                                                             Moment("variance")])
    full = torch.tensor([context_ids(lm.tokenizer) + ids])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(full).logits[0, :-1].double(), dim=-1)
    p = logp.exp()
    mu = (p * logp).sum(-1)
    expected_var = (p * logp**2).sum(-1) - mu**2
    assert mean[0].logprobs == pytest.approx(mu.numpy(), abs=1e-4)
    assert variance[0].logprobs == pytest.approx(expected_var.numpy(), abs=1e-3)
    assert plain[0].logprobs == pytest.approx(logp[torch.arange(len(ids)), ids].numpy(), abs=1e-4)


def test_recall_is_the_ratio_of_two_explicit_scorings(tiny_lm_dir):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    texts, prefix = ["Friends, Romans, countrymen.", "To take arms against a sea."], "Or to take"
    scored = score_suite(lm, None, texts, ["recall", "loss"], ms.ScoreSettings(), prefix=prefix,
                         progress=lambda f, m="": None)
    prefix_ids = lm.tokenizer(prefix, add_special_tokens=False)["input_ids"]
    for i, text in enumerate(texts):
        ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
        alone = score_texts(lm, [text])[0].logprobs
        after = score_under_samplers(lm, [prefix_ids + ids], [None])[0][0].logprobs[-len(ids):]
        assert scored.scores["recall"][i] == pytest.approx(after.mean() / alone.mean(), rel=1e-5)
        assert scored.scores["loss"][i] == pytest.approx(alone.mean(), rel=1e-5)


def _logprobs(lm, context: list[int], ids: list[int]) -> np.ndarray:
    """log p(x_i | context, x_<i) of the tokens ``ids`` after the engine's context token and
    ``context``, from one forward pass of the model."""
    full = torch.tensor([context_ids(lm.tokenizer) + context + ids])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(full).logits[0, :-1].double(), dim=-1)
    return logp[torch.arange(len(full[0]) - 1), full[0, 1:]][-len(ids):].numpy()


def _labelled_file(tmp_path, texts: list[str]) -> str:
    path = tmp_path / "texts.jsonl"
    path.write_text("\n".join(json.dumps({"text": t, "member": i % 2 == 0})
                              for i, t in enumerate(texts)), encoding="utf-8")
    return str(path)


def test_recall_keeps_the_whole_prefix_when_it_fits_and_its_end_when_not(tmp_path):
    """Issue #27: with a 512-token context and a prefix P of about 300 tokens, texts whose free
    room lies between |P| and 2|P| keep all of P (LL(x | P) / LL(x) as Xie et al. 2024 define
    it, by hand); longer ones its last tokens that fit, a text filling the window none; a note
    gives the range kept."""
    rng = np.random.default_rng(0)
    words = " ".join(mia.TINY_TEXTS).lower().replace(",", "").replace(".", "").split()
    prose = [" ".join(rng.choice(words, n)) + "." for n in (8, 15, 30, 50, 70, 140, 260)]
    prefix = " ".join(rng.choice(words, 130)) + "."
    (source,) = tiny_random_models(prose + [prefix], ["recall-context"], n_embd=32,
                                   n_positions=512)
    config = mia.MiaConfig(model=source, data=_labelled_file(tmp_path, prose),
                           attacks=("recall",), recall_prefix=prefix, bootstrap=10, device="cpu")
    result = mia.run(config)
    lm = resolve_model(source, device="cpu")
    prefix_ids, *texts_ids = lm.tokenizer([prefix] + prose, add_special_tokens=False)["input_ids"]
    rooms = [511 - len(ids) for ids in texts_ids]             # one token: the context token
    assert 250 < len(prefix_ids) < rooms[4] < rooms[0] < 2 * len(prefix_ids)
    assert 0 < rooms[5] < len(prefix_ids) and rooms[6] <= 0
    for row, ids, room in zip(result.rows, texts_ids, rooms):
        if room <= 0:
            assert row.scores["recall"] == 1.0
            continue
        kept = prefix_ids[max(0, len(prefix_ids) - room):]   # all of P when it fits
        expected = _logprobs(lm, kept, ids).mean() / _logprobs(lm, [], ids).mean()
        assert row.scores["recall"] == pytest.approx(expected, rel=1e-5)
    note = next(n for n in result.notes if "ReCaLL's prefix of" in n)
    assert "before 2 of the 7 texts" in note
    assert f"a text keeps 0 to {len(prefix_ids)} of the {len(prefix_ids)}" in note


def test_dc_pdd_of_a_run_is_the_papers_score_by_hand():
    """DC-PDD (Zhang et al. 2024, §3.3-3.4) through ``mia.run``: f(z) = (count(z) + 1) / (N + |V|)
    over the N tokens of the frequency corpus, α = min(p(x_i | x_<i) · log(1/f(x_i)), a) at the
    first occurrence of each token of x, the score their mean (higher: member)."""
    config = dataclasses.replace(mia.tiny_config(), attacks=("dcpdd",), dcpdd_cap=0.02)
    result = mia.run(config)
    lm = resolve_model(config.model, device="cpu")
    corpus = open(config.frequency_corpus, encoding="utf-8").read().splitlines()
    counts = Counter(z for ids in lm.tokenizer(corpus, add_special_tokens=False)["input_ids"]
                     for z in ids)
    vocab = max(len(lm.tokenizer), lm.card.vocab_size)
    capped = []
    for row in result.rows:
        ids = lm.tokenizer(row.text, add_special_tokens=False)["input_ids"]
        p = np.exp(score_texts(lm, [row.text])[0].logprobs)    # the engine's, as for loss
        first = [i for i, z in enumerate(ids) if z not in ids[:i]]
        alpha = [p[i] * math.log((sum(counts.values()) + vocab) / (counts[ids[i]] + 1))
                 for i in first]
        capped += [a > 0.02 for a in alpha]
        assert row.scores["dcpdd"] == pytest.approx(np.mean(np.minimum(alpha, 0.02)), rel=1e-5)
    assert any(capped) and not all(capped)


def test_every_attack_comes_from_one_scoring_pass_per_model(tiny_lm_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_SCORE_CACHE_MB", "0")
    clear_cache()
    copy = shutil.copytree(tiny_lm_dir, tmp_path / "reference")
    target, reference = (resolve_model(str(folder), device="cpu") for folder in (tiny_lm_dir, copy))
    fed: dict[int, list[tuple]] = {id(target.model): [], id(reference.model): []}
    real = engine._forward

    def counting(model, ids, mask):
        fed[id(model)] += [tuple(row[m.bool()].tolist()) for row, m in zip(ids, mask)]
        return real(model, ids, mask)

    monkeypatch.setattr(engine, "_forward", counting)
    texts = ["To be, or not to be.", "Friends, Romans.", "lend me your ears", "A sea of troubles."]
    chosen = list(ms.ATTACKS)
    frequency = ms.log_token_frequencies([np.arange(50)], 300)
    scored = score_suite(target, reference, texts, chosen, ms.ScoreSettings(log_frequency=frequency),
                         prefix="Whether 'tis nobler", progress=lambda f, m="": None)
    assert len(fed[id(target.model)]) == len(set(fed[id(target.model)])) == scored.sequences["target"]
    assert scored.sequences["target"] <= 3 * len(texts)     # texts, lowercased, prefixed
    assert len(fed[id(reference.model)]) == len(texts) == scored.sequences["reference"]
    assert all(np.isfinite(scored.scores[name]).all() for name in chosen)


def _rows(pairs):
    return [{"text": t, "member": m} for t, m in pairs]


@pytest.mark.parametrize("rows, message", [
    (_rows([("a", True), ("b", True), ("c", False)]), "at least 2 members and 2 non-members"),
    (_rows([("a", True), ("a", False), ("b", False), ("c", True)]), "both member and non-member"),
    ([{"text": "a", "member": ""}], "member is empty"),
    ([{"text": " ", "member": True}], "empty text"),
    ([{"text": "a", "member": "maybe"}], "true or false"),
])
def test_labelled_texts_are_checked(rows, message):
    with pytest.raises(UserError, match=message):
        parse_labelled(rows)


def test_a_text_repeated_with_one_label_is_kept_once():
    labelled = parse_labelled(_rows([("a", True), ("a", True), ("b", True), ("c", False),
                                     ("d", False)]))
    assert [t.text for t in labelled.texts] == ["a", "b", "c", "d"]
    assert labelled.duplicates_dropped == 1 and labelled.members == labelled.non_members == 2


def test_a_file_without_member_column_is_refused(tmp_path):
    path = tmp_path / "texts.csv"
    path.write_text("text\nhello\nworld\n")
    config = dataclasses.replace(mia.tiny_config(), data=str(path))
    with pytest.raises(UserError, match="no column member"):
        mia.run(config)


@pytest.mark.parametrize("changes, message", [
    ({"attacks": ("ref",), "reference": ""}, "needs a reference model"),
    ({"attacks": ("dcpdd",), "frequency_corpus": ""}, "needs a frequency corpus"),
    ({"attacks": ("recall",), "recall_shots": 0}, "needs a prefix"),
    ({"k": 0.0}, "k"),
    ({"recall_shots": 40}, "ReCaLL shots"),
])
def test_config_refuses_attacks_without_their_inputs(changes, message):
    with pytest.raises(UserError, match=message):
        dataclasses.replace(mia.tiny_config(), **changes)


def test_default_attacks_are_those_the_inputs_allow():
    config = dataclasses.replace(mia.tiny_config(), reference="", frequency_corpus="",
                                 recall_shots=0)
    assert config.chosen() == ["loss", "zlib", "lowercase", "mink", "minkpp"]


def test_blind_baseline_sees_a_leaky_split_and_not_a_fair_one():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    fair = [" ".join(rng.choice(words, 12)) for _ in range(120)]
    labels = np.array([i % 2 for i in range(120)])
    assert abs(_auroc(labels, blind_scores(fair, labels)) - 0.5) < 0.15
    leaky = [t + (" in 2024" if m else " in 1999") for t, m in zip(fair, labels)]
    leaky_auroc = _auroc(labels, blind_scores(leaky, labels))
    assert leaky_auroc > 0.95
    assert "Das, Zhang & Tramèr" in blind_warning(leaky_auroc, "Loss", 0.9)
    assert blind_warning(0.5, "Loss", 0.9) is None


def _auroc(labels, scores):
    from sklearn.metrics import roc_auc_score
    return roc_auc_score(labels, scores)


def test_tiny_run_reports_every_attack_and_the_blind_baseline():
    result = mia.run(mia.tiny_config())
    assert [a.name for a in result.attacks] == list(ms.ATTACKS)
    assert result.n_members + result.n_non_members == 11   # one non-member is ReCaLL's prefix
    assert result.recall_prefix and any("ReCaLL's prefix" in n for n in result.notes)
    assert all(0 <= a.metrics.auroc <= 1 for a in result.attacks)
    assert set(result.rows[0].scores) == set(ms.ATTACKS)
    assert set(result.group_auroc["loss"]) == {"a", "b"}
    assert mia.headline(result)["best_auroc"] == max(a.metrics.auroc for a in result.attacks)


def test_demo_membership_set_has_the_same_speakers_on_both_sides(demo_home):
    from core.readers.data import data_file
    rows = [json.loads(line) for line in data_file("demo:membership").read_text().splitlines()]
    members = [r for r in rows if r["member"]]
    outside = [r for r in rows if not r["member"]]
    assert members and len(members) == len(outside)
    assert sorted(r["group"] for r in members) == sorted(r["group"] for r in outside)
    assert not {r["text"] for r in members} & {r["text"] for r in outside}
    assert math.isclose(np.mean([len(r["text"]) for r in members]),
                        np.mean([len(r["text"]) for r in outside]), rel_tol=0.5)


def test_a_dp_run_caps_the_tpr_of_any_attack():
    from core.bounds.risk import tpr_cap

    config = dataclasses.replace(mia.tiny_config(), sigma=2.0, q=0.01, steps=100)
    caps = mia.tpr_caps(config)
    assert list(caps) == ["0.001", "0.01", "0.05"]
    assert caps["0.01"] == pytest.approx(float(tpr_cap(2.0, 0.01, 100, [0.01])[0]))
    assert 0.01 <= caps["0.01"] < caps["0.05"] < 1
    assert mia.tpr_caps(dataclasses.replace(config, sigma=0.0)) == {}
