"""Lazy-sampling risk (Stock et al. 2022 §3.2, §4.2): the numbers are the scoring engine's, each
set is scored once per model, the ranking puts the demo's planted secret first, tracked
sentences get their rank, and bad input is refused."""

import dataclasses
import json
import math

import numpy as np
import pytest

from core.__main__ import main
from core.attacks.extraction import spec as ex
from core.attacks.lazy_risk import spec as lr
from core.demo import scenario
import core.scoring.engine as engine
from core.errors import UserError
from core.jobs import Store, run_now
from core.models import resolve_model
from core.scoring import Sampler, clear_cache, score_texts
from core.serialize import from_jsonable, to_jsonable
from pagetest import page_app


def test_each_number_is_the_chain_rule_of_the_engine(tmp_path):
    target, calibration, _ = ex.tiny_models()
    train = tmp_path / "train.txt"
    train.write_text("to be or not\nto be or not\nthe dog\n")
    config = lr.LazyRiskConfig(model=target, calibration=calibration, train=str(train), test="",
                               top_k=0, temperature=2.0, temperature_start=4.0, decay_tokens=3,
                               n_generated=3, generated_tokens=5, device="cpu")
    assert config.sampler == Sampler(top_k=None, temperature=(4.0, 3.0, 2.0))
    result = lr.run(config)
    train_rows = [s for s in result.sentences if s.set == "train"]
    assert {s.text: s.copies for s in train_rows} == {"to be or not": 2, "the dog": 1}
    assert [s.rank for s in train_rows] == [1, 2]
    assert train_rows[0].record_risk >= train_rows[1].record_risk   # the default ranking
    lm_t, lm_c = resolve_model(target), resolve_model(calibration)
    for s in train_rows:
        [gen] = score_texts(lm_t, [s.text], sampler=config.sampler)
        [tgt], [cal] = score_texts(lm_t, [s.text]), score_texts(lm_c, [s.text])
        assert s.generation_logprob == pytest.approx(gen.total_logprob)
        assert s.calibrated_loss == pytest.approx(cal.total_logprob - tgt.total_logprob)
        assert s.expected_samples == pytest.approx(math.exp(-gen.total_logprob))
        assert s.log10_probability == pytest.approx(gen.total_logprob / math.log(10))
        assert s.risk == pytest.approx(s.generation_logprob - s.calibrated_loss)
        assert s.record_risk == pytest.approx(s.generation_logprob - s.calibrated_loss / s.n_tokens)
    generated = [s for s in result.sentences if s.set == "generated"]
    assert generated and all(math.isfinite(s.generation_logprob) for s in generated)
    assert result.counts == {"train": 2, "generated": len(generated)}


def test_each_set_is_scored_once_per_model(monkeypatch, tmp_path):
    target, calibration, _ = ex.tiny_models()
    corpus = tmp_path / "train.txt"
    corpus.write_text("to be or not\nthe dog\nthe cat sat\nthe dog\n")  # short: one window each
    names = {resolve_model(target, device="cpu").model: "target",   # loaded (and their load-time
             resolve_model(calibration, device="cpu").model: "calibration"}  # scoring) first
    forwarded = {"target": 0, "calibration": 0}
    real = engine._forward

    def counting(model, input_ids, attention_mask):
        forwarded[names[model]] += input_ids.shape[0]
        return real(model, input_ids, attention_mask)

    monkeypatch.setattr(engine, "_forward", counting)
    clear_cache()   # the tiny models are the session's: an earlier test may have scored these
    result = lr.run(lr.LazyRiskConfig(model=target, calibration=calibration, train=str(corpus),
                                      test=str(corpus), top_k=20, n_generated=0, device="cpu"))
    n_train = result.counts["train"]
    assert n_train == 3 and result.counts["test"] == n_train
    # one window per sentence: the target's loss and its top-k density from the same forward
    # passes; the test set, the same sentences here, comes from the cache
    assert forwarded == {"target": n_train, "calibration": n_train}


def test_tracked_sentences_are_kept_and_ranked(tmp_path):
    target, calibration, _ = ex.tiny_models()
    train = tmp_path / "train.txt"
    train.write_text("to be or not\nthe dog\nthe cat sat\n")
    config = lr.LazyRiskConfig(model=target, calibration=calibration, train=str(train), top_k=0,
                               n_generated=0, max_sentences=1, device="cpu",
                               track=("cat sat", "absent words"))
    result = lr.run(config)
    [kept] = [s for s in result.sentences if s.set == "train"]  # the draw keeps tracked ones
    assert kept.text == "the cat sat" and kept.rank == 1
    found, absent = result.tracked
    assert (found.sentence, found.rank, found.matches) == ("the cat sat", 1, 1)
    assert found.log10_probability == pytest.approx(kept.log10_probability)
    assert (absent.sentence, absent.rank, absent.matches) == (None, None, 0)
    assert result.worst_tracked_rank == 1 and lr.headline(result)["worst_tracked_rank"] == 1
    assert any("absent words" in note for note in result.notes)


def test_a_line_inside_longer_texts_is_a_sentence_of_its_own_by_line(tmp_path, capsys):
    """``--unit line`` (issue #45, the shift scenario): a record pasted as one line into
    several longer texts is one sentence with its copies, scored alone, and ranked; whole texts
    (the default) keep it inside each text."""
    target, calibration, _ = ex.tiny_models()
    train = tmp_path / "train.jsonl"
    secret = "the cat sat"
    texts = [f"to be or not\n{secret}\nthe dog", f"the dog ran\n{secret}", "to be\nor not"]
    train.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    args = ["lazy-risk", "--model", target, "--calibration", str(calibration), "--train",
            str(train), "--generated", "0", "--track", secret, "--device", "cpu", "--json"]
    main([*args, "--unit", "line"])
    by_line = json.loads(capsys.readouterr().out)
    rows = {s["text"]: s for s in by_line["sentences"]}
    assert set(rows) == {"to be or not", secret, "the dog", "the dog ran", "to be", "or not"}
    assert rows[secret]["copies"] == 2 and by_line["tracked"][0]["rank"] == rows[secret]["rank"]
    [one] = score_texts(resolve_model(target), [secret])
    assert rows[secret]["generation_logprob"] == pytest.approx(one.total_logprob)
    main(args)
    whole = json.loads(capsys.readouterr().out)
    assert {s["text"] for s in whole["sentences"]} == set(texts)
    assert whole["tracked"][0]["matches"] == 2


def test_top_k_gives_zero_probability_and_json_has_no_infinity():
    config = lr.tiny_config()
    result = lr.run(config)
    train = [s for s in result.sentences if s.set == "train"]
    assert result.never_generated["train"] == sum(math.isinf(s.generation_logprob) for s in train)
    assert result.never_generated["generated"] == 0
    json.dumps(to_jsonable(result), allow_nan=False)


def test_the_demo_secret_is_among_the_most_at_risk_training_sentences(tiny_demo):
    manifest = scenario.load_manifest(tiny_demo)
    config = lr.LazyRiskConfig(
        model=str(scenario.model_dir("updated", tiny_demo)),
        calibration=str(scenario.model_dir("base", tiny_demo)),
        train=str(scenario.data_file("private_train", tiny_demo)),
        test=str(scenario.data_file("user_samples", tiny_demo)), n_generated=16, device="cpu",
        track=(manifest.secret.prompt, *(c.phrase for c in manifest.canaries)))
    assert config.sampler.is_plain  # the default: no top-k, so every sentence is ranked
    result = lr.run(config)
    train = [s for s in result.sentences if s.set == "train"]
    assert result.never_generated["train"] == 0
    secret = next(s for s in train if s.text == manifest.secret.sentence)
    tracked = {t.text: t for t in result.tracked}
    assert tracked[manifest.secret.prompt].sentence == secret.text
    assert tracked[manifest.secret.prompt].rank == secret.rank
    ranks = [next(s.rank for s in train if s.text == c.phrase) for c in manifest.canaries]
    assert [tracked[c.phrase].rank for c in manifest.canaries] == ranks
    assert result.worst_tracked_rank == max(ranks + [secret.rank])
    assert secret.copies == manifest.secret.count
    assert secret.rank <= max(1, len(train) // 100) + 1, f"secret ranked {secret.rank} of {len(train)}"
    assert secret.expected_samples < 1e3 and secret.calibrated_loss < -50
    assert result.worst_tracked_rank <= 5   # as records, every plant outranks long sentences
    paper = [dataclasses.replace(s) for s in result.sentences]
    lr._rank(paper, "sentence")
    paper_train = [s for s in paper if s.set == "train"]
    assert [s.risk for s in paper_train] == sorted((s.risk for s in paper_train), reverse=True)
    assert [s.rank for s in paper_train] == list(range(1, len(train) + 1))
    # Figure 5: the trained-on sentences have a lower calibrated loss than the held-out ones
    assert result.mean_calibrated_loss["train"] < result.mean_calibrated_loss["test"]
    assert np.isfinite([s.generation_logprob for s in result.sentences if s.set == "generated"]).all()


def test_config_and_inputs_are_checked(tiny_lm_dir, tmp_path):
    bad_settings = {"top-k": dict(top_k=-1), "temperature must be above 0": dict(temperature=0.0),
                    "give a training set": dict(train=""), "generated tokens": dict(generated_tokens=0),
                    "choose a target model": dict(calibration=""),
                    "a sentence to track is empty": dict(track=("a secret", " "))}
    for message, bad in bad_settings.items():
        with pytest.raises(UserError, match=message):
            lr.LazyRiskConfig(**dict(model="m", calibration="c", train="t.txt") | bad)
    # no starting temperature (0): a constant one, as when it equals the temperature
    for start in (0.0, 2.0):
        config = lr.LazyRiskConfig(model="m", calibration="c", train="t.txt", temperature=2.0,
                                   temperature_start=start)
        assert config.sampler == Sampler(top_k=None, temperature=2.0)
    target, _, corpus = ex.tiny_models()
    with pytest.raises(UserError, match="different tokenizers"):
        lr.run(lr.LazyRiskConfig(model=target, calibration=str(tiny_lm_dir), train=corpus, device="cpu"))
    with pytest.raises(UserError, match="no such file"):
        lr.run(lr.LazyRiskConfig(model=target, calibration=target, train=str(tmp_path / "x.txt"),
                                 device="cpu"))


def test_cli_prints_the_most_at_risk_sentences(capsys):
    target, calibration, corpus = ex.tiny_models()
    code = main(["lazy-risk", "--model", target, "--calibration", calibration, "--train", corpus,
                 "--test", corpus, "--top-k", "0", "--generated", "2", "--device", "cpu",
                 "--track", "secret password", "the", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    result = from_jsonable(lr.LazyRiskResult, out)   # the one output shape: the result
    most_at_risk = [s for s in result.sentences if s.set == "train"]
    assert [s.rank for s in most_at_risk[:2]] == [1, 2]
    assert out["counts"] == {"train": 3, "test": 3, "generated": 2}
    assert out["sampler"] == {"top_k": None, "temperature": 1.0, "top_p": None}
    secret = next(s for s in most_at_risk if s.text.startswith("My secret password"))
    holding = [s.rank for s in most_at_risk if "the" in s.text]
    assert [(t["rank"], t["matches"]) for t in out["tracked"]] == [(secret.rank, 1), (min(holding), len(holding))]
    assert out["worst_tracked_rank"] == max(secret.rank, min(holding))


def test_runs_page_shows_the_tracked_ranks():
    target, calibration, corpus = ex.tiny_models()
    config = lr.LazyRiskConfig(model=target, calibration=calibration, train=corpus, n_generated=0,
                               device="cpu", track=("secret password", "absent words"))
    result = run_now(lr.SPEC, config, progress=lambda *a, **k: None)
    [run] = Store().runs("lazy-risk")
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    prefix = f"run-{run.id}-"
    found = result.tracked[0]
    metric = next(m for m in at.metric if m.label == "Worst-ranked tracked sentence")
    assert metric.value == f"{found.rank} of {result.counts['train']}"
    tracked = at.get_by_key(f"{prefix}tracked").dataframe[0].value
    assert list(tracked["tracked"]) == ["secret password", "absent words"]
    assert tracked["rank"].iloc[0] == found.rank and tracked["sentence"].iloc[0] == found.sentence
    table = at.get_by_key(f"{prefix}table-1").dataframe[0].value
    assert list(table.loc[table["tracked"], "text"]) == [found.sentence]
    assert any("absent words" in i.value for i in at.info)
