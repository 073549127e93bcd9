"""The scoring engine against naive per-sample references, sampler densities, cache, OOM back-off."""

import json
import threading

import numpy as np
import pytest
import torch

import core.scoring.cache as cache
import core.scoring.engine as engine
from conftest import TINY_TEXTS
from core.__main__ import main
from core.errors import UserError
from core.runtime import Cancelled
from core.models import load_model
from core.scoring import Sampler, clear_cache, score_texts, score_token_ids, score_under_samplers
from modelfiles import clean_models  # noqa: F401


@pytest.fixture
def lm(tiny_lm_dir):
    return load_model(str(tiny_lm_dir), name="tiny", device="cpu")


def _naive(lm, ids):
    """One full forward on [BOS] + ids alone: log p(ids[i] | BOS, ids[:i])."""
    full = torch.tensor([[lm.tokenizer.bos_token_id] + list(ids)])
    with torch.no_grad():
        logprobs = torch.log_softmax(lm.model(full).logits[0, :-1].double(), -1)
    return logprobs.gather(-1, full[0, 1:, None])[:, 0].numpy()


def _naive_windowed(lm, ids, window, stride):
    """The sliding-window recipe written out: each window's new tokens scored with its left context."""
    full = [lm.tokenizer.bos_token_id] + list(ids)
    out, begin, done = [], 0, 1
    while True:
        end = min(begin + window, len(full))
        piece = torch.tensor([full[begin:end]])
        with torch.no_grad():
            lp = torch.log_softmax(lm.model(piece).logits[0, :-1].double(), -1)
        lp = lp.gather(-1, piece[0, 1:, None])[:, 0].numpy()
        out.append(lp[len(lp) - (end - done):])
        if end == len(full):
            return np.concatenate(out)
        done, begin = end, begin + stride


TEXTS = TINY_TEXTS + ["Ay.", "O Romeo, Romeo, wherefore art thou Romeo?"]


def test_batched_scores_equal_the_per_sample_reference(lm):
    scores = score_texts(lm, TEXTS, batch_size=3)
    assert [s.text for s in scores] == TEXTS
    for s, text in zip(scores, TEXTS):
        ids = lm.tokenizer(text, add_special_tokens=False).input_ids
        assert s.token_ids.dtype == np.int64 and s.token_ids.tolist() == ids
        assert s.first_scored == 0 and s.logprobs.dtype == np.float32 and len(s.logprobs) == len(ids)
        np.testing.assert_allclose(s.logprobs, _naive(lm, ids), atol=1e-5)
        assert s.perplexity == pytest.approx(np.exp(-_naive(lm, ids).mean()), rel=1e-5)


def test_token_id_sequences_and_no_bos(lm):
    ids = lm.tokenizer(TEXTS[1], add_special_tokens=False).input_ids
    [with_bos] = score_token_ids(lm, [ids])
    [without] = score_token_ids(lm, [ids], add_bos=False)
    assert without.first_scored == 1 and len(without.logprobs) == len(ids) - 1
    with torch.no_grad():
        reference = torch.log_softmax(lm.model(torch.tensor([ids])).logits[0, :-1], -1)
    np.testing.assert_allclose(without.logprobs, reference.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0], atol=1e-5)
    assert not np.allclose(with_bos.logprobs[1:], without.logprobs)  # BOS context changes the scores
    with pytest.raises(UserError, match="outside the model's vocabulary"):
        score_token_ids(lm, [[1, 2, 10_000]])


def test_long_texts_use_sliding_windows_like_the_naive_recipe(lm):
    text = " ".join(TINY_TEXTS * 3)  # ~240 tokens, context is 64
    ids = lm.tokenizer(text, add_special_tokens=False).input_ids
    assert len(ids) > 3 * 64
    for window, stride in [(None, None), (40, 39)]:
        [s] = score_texts(lm, [text], window=window, stride=stride, batch_size=2)
        expected = _naive_windowed(lm, ids, window or 64, stride or 32)
        assert len(s.logprobs) == len(ids)
        np.testing.assert_allclose(s.logprobs, expected, atol=1e-5)


def _next_token_logits(lm, prefix_ids):
    full = torch.tensor([[lm.tokenizer.bos_token_id] + prefix_ids])
    with torch.no_grad():
        return lm.model(full).logits[0, -1].double().numpy()


@pytest.mark.parametrize("top_k, temperature", [(5, 0.5), (None, 2.0)])
def test_sampler_density_over_the_whole_vocabulary(lm, top_k, temperature):
    """Score prefix + every possible next token: λ matches the hand formula and sums to 1."""
    prefix = lm.tokenizer("To be, or not", add_special_tokens=False).input_ids
    vocab = len(lm.tokenizer)
    sampler = Sampler(top_k=top_k, temperature=temperature)
    scores = score_token_ids(lm, [prefix + [v] for v in range(vocab)], sampler=sampler)
    density = np.exp(np.array([s.logprobs[-1] for s in scores], dtype=np.float64))

    z = _next_token_logits(lm, prefix) / temperature
    keep = np.ones(vocab, bool) if top_k is None else z >= np.sort(z)[-top_k]
    expected = np.where(keep, np.exp(z - z.max()), 0.0)
    expected /= expected.sum()
    np.testing.assert_allclose(density, expected, atol=1e-6)
    assert density.sum() == pytest.approx(1.0, abs=1e-5)
    assert (density > 0).sum() == (top_k or vocab)
    assert all(np.isneginf(s.logprobs[-1]) for s, k in zip(scores, keep) if not k)


def test_temperature_schedule_is_indexed_by_scored_token(lm):
    ids = lm.tokenizer(TEXTS[0], add_special_tokens=False).input_ids[:6]
    [scheduled] = score_token_ids(lm, [ids], sampler=Sampler(temperature=(10.0, 5.0, 1.0)))
    for j, temperature in enumerate([10.0, 5.0, 1.0, 1.0, 1.0, 1.0]):
        z = _next_token_logits(lm, ids[:j]) / temperature
        expected = z[ids[j]] - np.log(np.exp(z - z.max()).sum()) - z.max()
        assert scheduled.logprobs[j] == pytest.approx(expected, abs=1e-5)


def test_sampler_rejects_bad_parameters():
    for bad in [dict(temperature=0), dict(temperature=float("nan")), dict(top_k=0), dict(temperature=[])]:
        with pytest.raises(UserError):
            Sampler(**bad)


@pytest.fixture
def forward_calls(monkeypatch):
    calls = []
    real = engine._forward

    def counting(model, input_ids, attention_mask):
        calls.append(tuple(input_ids.shape))
        return real(model, input_ids, attention_mask)

    monkeypatch.setattr(engine, "_forward", counting)
    return calls


def test_cache_hit_runs_no_second_forward(lm, forward_calls):
    first = score_texts(lm, TEXTS)
    n_calls = len(forward_calls)
    assert n_calls >= 1
    again = score_texts(lm, list(reversed(TEXTS)))
    assert len(forward_calls) == n_calls
    assert [s.text for s in again] == list(reversed(TEXTS))
    np.testing.assert_array_equal(again[0].logprobs, first[-1].logprobs)
    score_texts(lm, TEXTS, sampler=Sampler(top_k=3))  # another sampler is another computation
    assert len(forward_calls) > n_calls
    with pytest.raises(ValueError):
        first[0].logprobs[0] = 0.0  # cached arrays are read-only


def test_duplicates_are_scored_once(lm, forward_calls):
    scores = score_texts(lm, [TEXTS[0]] * 5, batch_size=64)
    assert forward_calls == [(1, len(scores[0].token_ids) + 1)]


def test_several_samplers_come_from_one_forward_pass(lm, forward_calls):
    ids = lm.tokenizer(TEXTS, add_special_tokens=False)["input_ids"]
    sampler = Sampler(top_k=3, temperature=(2.0, 1.0))
    plain, sampled, plain_again = score_under_samplers(lm, ids, [None, sampler, Sampler()])
    assert sum(rows for rows, _ in forward_calls) == len(TEXTS)  # each text forwarded once
    n_calls = len(forward_calls)
    assert any(np.isneginf(s.logprobs).any() for s in sampled)
    for together, alone in [(plain, score_token_ids(lm, ids)), (plain_again, score_token_ids(lm, ids)),
                            (sampled, score_token_ids(lm, ids, sampler=sampler))]:
        for a, b in zip(together, alone):  # what a call for that sampler alone gives, cached
            np.testing.assert_array_equal(a.logprobs, b.logprobs)
    assert len(forward_calls) == n_calls
    clear_cache()
    for a, b in zip(sampled, score_token_ids(lm, ids, sampler=sampler)):  # computed alone
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-6)


def test_out_of_memory_halves_the_batch_and_retries(lm, monkeypatch):
    expected = score_texts(lm, TEXTS, batch_size=1)
    clear_cache()  # memory and disk: score again
    sizes = []
    real = engine._forward

    def fake_oom(model, input_ids, attention_mask):
        sizes.append(input_ids.shape[0])
        if input_ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model, input_ids, attention_mask)

    monkeypatch.setattr(engine, "_forward", fake_oom)
    scores = score_texts(lm, TEXTS, batch_size=8)
    assert sizes[:2] == [7, 3] and set(sizes[2:]) == {1}  # 7 fails, 3 fails, then one at a time
    for s, e in zip(scores, expected):
        np.testing.assert_allclose(s.logprobs, e.logprobs, atol=1e-6)


def test_out_of_memory_in_the_head_also_halves_the_batch(lm, monkeypatch):
    """The head and log-softmax run after ``_forward``, on chunks of positions: an OOM there is
    handled as one in the forward pass."""
    expected = score_texts(lm, TEXTS, batch_size=1)
    clear_cache()  # memory and disk: score again
    rows = []
    real_forward, real_values = engine._forward, engine.fused.readouts(lm.model, 2)

    def recording(model, input_ids, attention_mask):
        rows.append(input_ids.shape[0])
        return real_forward(model, input_ids, attention_mask)

    def fake_oom(*args):
        if rows[-1] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_values(*args)

    monkeypatch.setattr(engine, "_forward", recording)
    monkeypatch.setattr(engine.fused, "readouts", lambda model, positions: fake_oom)
    scores = score_texts(lm, TEXTS, batch_size=8)
    assert rows[:3] == [7, 3, 1]
    for s, e in zip(scores, expected):
        np.testing.assert_allclose(s.logprobs, e.logprobs, atol=1e-6)


def test_out_of_memory_with_one_sequence_is_a_clear_error_and_keeps_finished_work(lm, monkeypatch):
    real = engine._forward
    shortest = min(len(lm.tokenizer(t).input_ids) for t in TEXTS) + 1  # scored last

    def oom_on_shortest(model, input_ids, attention_mask):
        if input_ids.shape[1] == shortest:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 GB")
        return real(model, input_ids, attention_mask)

    monkeypatch.setattr(engine, "_forward", oom_on_shortest)
    clear_cache()  # memory and disk: score again
    with pytest.raises(UserError, match="out of memory scoring one window"):
        score_texts(lm, TEXTS, batch_size=1)
    assert len(cache.CACHE) == len(TEXTS) - 1


def test_other_errors_are_not_mistaken_for_out_of_memory(lm, monkeypatch):
    def broken(model, input_ids, attention_mask):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(engine, "_forward", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        score_texts(lm, TEXTS)


def test_progress_and_cancel(lm):
    seen = []
    score_texts(lm, TEXTS, batch_size=2, progress=lambda f, m: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0) and len(seen) == 4
    clear_cache()  # memory and disk: score again
    cancel = threading.Event()

    def stop_after_first(fraction, message):
        cancel.set()

    with pytest.raises(Cancelled):
        score_texts(lm, TEXTS, batch_size=2, progress=stop_after_first, cancel=cancel)
    assert len(cache.CACHE) == 2  # the finished batch is kept


def test_empty_text_scores_nothing(lm):
    [empty] = score_texts(lm, [""])
    assert empty.n_scored == 0 and empty.total_logprob == 0.0 and np.isnan(empty.perplexity)


def test_score_cli(tiny_lm_dir, tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text(f"{TEXTS[0]}\n\n{TEXTS[1]}\n")
    assert main(["score", "--model", str(tiny_lm_dir), "--input", str(texts), "--top-k", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sampler"] == {"top_k": 5, "temperature": 1.0, "top_p": None} and len(out["texts"]) == 2
    row = out["texts"][0]
    lm = load_model(str(tiny_lm_dir), device="cpu")
    [expected] = score_texts(lm, [TEXTS[0]], sampler=Sampler(top_k=5))
    assert row["n_tokens"] == len(row["logprobs"]) == len(row["tokens"]) == expected.n_scored
    assert "".join(row["tokens"]) == TEXTS[0]
    assert [v if v is not None else -np.inf for v in row["logprobs"]] == pytest.approx(expected.logprobs.tolist())


def test_score_cli_bad_inputs(tiny_lm_dir, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert main(["score", "--model", str(tiny_lm_dir), "--input", str(empty), "--json"]) == 2
    assert "holds no text" in capsys.readouterr().err
    assert main(["score", "--model", str(tiny_lm_dir), "--input", str(tmp_path / "nope.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert main(["score", "--model", str(tiny_lm_dir), "--input", str(bad)]) == 2
    assert "must hold a list (of strings or records)" in capsys.readouterr().err
    texts = tmp_path / "t.txt"
    texts.write_text("hello\n")
    assert main(["score", "--model", str(tiny_lm_dir), "--input", str(texts), "--temperature", "0"]) == 2
    assert "--temperature must be above 0 and at most 100, not 0" in capsys.readouterr().err
