"""User inference (Kandpal et al. 2023): T̂, metrics against scikit-learn, bootstrap, data
validation, canary users, mitigations, the generated CLI, and the attack on the tiny demo."""

import json
import random
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file
from sklearn.metrics import roc_auc_score

from core.__main__ import main
from core.attacks.user_inference import canaries as uc
from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.mitigations import dedup_within_user, limit_per_user
from core.attacks.user_inference.samples import Sample, load_samples
from core.demo import scenario
from core.demo import whatif
from core.errors import UserError
from core.evaluation import membership as me
from core.models import load_model
from core.serialize import from_jsonable, to_jsonable
from demo_fixtures import install_demo, naive_text_logprobs


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


@pytest.fixture(scope="module")
def demo_models(tiny_demo):
    return str(scenario.model_dir("updated", tiny_demo)), str(scenario.model_dir("base", tiny_demo))


@pytest.fixture(scope="module")
def micro_demo(tmp_path_factory):
    """A demo one size below the tiny one: retraining it takes about a second."""
    root = tmp_path_factory.mktemp("micro-demo")
    scenario.build(whatif.micro_demo_config(), root=root)
    return root


# ---------------------------------------------------------------- the statistic


def test_t_hat_is_the_mean_log_likelihood_ratio_computed_by_hand(tmp_path, demo_models):
    texts = {"ann": ["To be, or not to be.", "A horse! a horse! my kingdom for a horse!"],
             "bob": ["Now is the winter of our discontent."]}
    records = [{"user_id": u, "text": t} for u, ts in texts.items() for t in ts]
    data = _write(tmp_path / "u.jsonl", records)
    result = ui.run(ui.UserInferenceConfig(model=demo_models[0], reference=demo_models[1], data=data,
                                           bootstrap=0))
    target, reference = load_model(demo_models[0]), load_model(demo_models[1])
    for user, ts in texts.items():
        # log p(text | EOS) one text at a time, with the demo's own unbatched scorer
        ours = naive_text_logprobs(target.model, target.tokenizer, ts)
        theirs = naive_text_logprobs(reference.model, reference.tokenizer, ts)
        ratios = [a - b for (a, _), (b, _) in zip(ours, theirs)]
        row = next(r for r in result.rows if r.user_id == user)
        assert row.m == len(ts)
        assert row.t_hat == pytest.approx(sum(ratios) / len(ratios), abs=1e-3)
    assert [r.rank for r in result.rows] == [1, 2] and result.rows[0].t_hat >= result.rows[1].t_hat
    assert result.metrics == [] and result.auroc is None and result.threshold is None
    assert ui.user_statistic({"u": np.array([1.0, 2.0, 6.0])}) == {"u": 3.0}
    assert from_jsonable(ui.UserInferenceResult, to_jsonable(result)) == result


def test_each_scored_chunk_reports_its_users_t_hat_as_a_partial_result(tmp_path, demo_models,
                                                                      monkeypatch):
    monkeypatch.setattr(ui, "SCORE_CHUNK", 2)  # one partial result per two samples (whole users)
    records = [{"user_id": f"u{i}", "text": f"Now is the winter of our discontent {i}."}
               for i in range(5)]
    partials = []
    result = ui.run(ui.UserInferenceConfig(model=demo_models[0], reference=demo_models[1],
                                           data=_write(tmp_path / "u.jsonl", records), bootstrap=0),
                    progress=lambda f, m="", partial=None: partial and partials.append(partial))
    assert [p["samples_scored"] for p in partials] == [2, 4, 5]
    assert partials[-1]["t_hat_so_far"] == pytest.approx({r.user_id: r.t_hat for r in result.rows})
    assert set(partials[0]["t_hat_so_far"]) == {"u0", "u1"}


def test_figures_on_a_handful_of_users_say_they_carry_no_real_interval(tmp_path, demo_models):
    records = [{"user_id": f"u{i}", "text": f"Now is the winter of our discontent {i}.",
                "member": i % 2 == 0} for i in range(6)]
    result = ui.run(ui.UserInferenceConfig(model=demo_models[0], reference=demo_models[1],
                                           data=_write(tmp_path / "u.jsonl", records), bootstrap=50))
    assert any("only 3 held-in and 3 held-out users" in note and "10 values" in note
               for note in result.notes)


def test_long_texts_are_windowed_and_said_so_and_other_tokenizers_refused(tmp_path, demo_models,
                                                                           tiny_lm_dir):
    long_text = " ".join(["Friends, Romans, countrymen, lend me your ears."] * 30)
    data = _write(tmp_path / "u.jsonl", [{"user_id": "a", "text": long_text},
                                         {"user_id": "b", "text": "Short."},
                                         {"user_id": "b", "text": "Short."}])
    result = ui.run(ui.UserInferenceConfig(model=demo_models[0], reference=demo_models[1], data=data,
                                           bootstrap=0))
    assert result.window == 64 and result.windowed_samples == 1
    long_row = next(s for s in result.samples if s.user_id == "a")
    assert long_row.windowed and long_row.n_tokens > 64
    assert any("sliding window" in note for note in result.notes)
    assert any(note.startswith("1 samples repeat") for note in result.notes)
    with pytest.raises(UserError, match="different tokenizers"):
        ui.run(ui.UserInferenceConfig(model=demo_models[0], reference=str(tiny_lm_dir), data=data))


# ---------------------------------------------------------------- metrics


def _brute_tpr_at_fpr(labels, scores, target):
    """Best TPR over every threshold 'score >= t' whose FPR is at most target."""
    best = 0.0
    for t in np.unique(scores):
        predicted = scores >= t
        if predicted[labels == 0].mean() <= target + 1e-12:
            best = max(best, predicted[labels == 1].mean())
    return best


def test_auroc_and_tpr_match_scikit_learn_and_a_brute_force_on_synthetic_scores():
    rng = np.random.default_rng(1)
    labels = np.r_[np.ones(60), np.zeros(140)].astype(int)
    scores = np.round(rng.normal(labels * 1.0, 1.0), 1)  # rounding makes ties
    m = me.evaluate(labels, scores, bootstrap=0)
    assert m.auroc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert m.tpr_at_1pct_fpr == pytest.approx(_brute_tpr_at_fpr(labels, scores, 0.01))
    assert m.tpr_at_5pct_fpr == pytest.approx(_brute_tpr_at_fpr(labels, scores, 0.05))
    assert (m.n_in, m.n_out, m.auroc_ci) == (60, 140, [])
    assert m.roc_fpr[0] == 0 and m.roc_fpr[-1] == 1 and m.roc_tpr[-1] == 1


def test_tpr_at_fpr_takes_the_best_existing_point_without_interpolation():
    # in = [3, 1], out = [2, 0]: ROC points (0, 0), (0, .5), (.5, .5), (.5, 1), (1, 1)
    fpr, tpr = np.array([0, 0, 0.5, 0.5, 1]), np.array([0, 0.5, 0.5, 1, 1])
    assert me.tpr_at_fpr(fpr, tpr, 0.0) == 0.5
    assert me.tpr_at_fpr(fpr, tpr, 0.49) == 0.5   # interpolation would say 0.99
    assert me.tpr_at_fpr(fpr, tpr, 0.5) == 1.0    # an exact ROC point counts
    # 20 held-out users: FPR 5% is exactly one false positive
    labels = np.r_[np.ones(5), np.zeros(20)].astype(int)
    scores = np.r_[[10, 9, 8, 0.5, 0.4], [9.5] + list(np.arange(19) / 100)]
    m = me.evaluate(labels, scores, bootstrap=0)
    assert m.tpr_at_1pct_fpr == pytest.approx(0.2) and m.tpr_at_5pct_fpr == pytest.approx(1.0)
    assert m.tpr_at_5pct_fpr == _brute_tpr_at_fpr(labels, scores, 0.05)


def test_bootstrap_is_seeded_contains_the_estimate_and_narrows_with_more_users():
    def synthetic(n, seed):
        rng = np.random.default_rng(seed)
        labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
        return labels, rng.normal(labels * 1.0, 1.0)

    labels, scores = synthetic(30, 0)
    a = me.evaluate(labels, scores, bootstrap=300, seed=7)
    assert a.auroc_ci == me.evaluate(labels, scores, bootstrap=300, seed=7).auroc_ci
    assert a.auroc_ci != me.evaluate(labels, scores, bootstrap=300, seed=8).auroc_ci
    for value, (low, high) in ((a.auroc, a.auroc_ci), (a.tpr_at_5pct_fpr, a.tpr_at_5pct_fpr_ci)):
        assert low <= value <= high
    big = me.evaluate(*synthetic(600, 0), bootstrap=300, seed=7)
    assert big.auroc_ci[1] - big.auroc_ci[0] < 0.5 * (a.auroc_ci[1] - a.auroc_ci[0])
    assert big.auroc_ci[0] < 0.76 < big.auroc_ci[1]  # true AUROC of N(1,1) vs N(0,1): Φ(1/√2)


def test_bootstrap_resamples_held_in_and_held_out_users_apart():
    """Every resample keeps both groups at their sizes: with 1 held-out user an AUROC
    resample is always defined, and the interval of a perfect separation is [1, 1]."""
    m = me.evaluate([1, 1, 1, 0], [3.0, 2.0, 5.0, 0.0], bootstrap=50, seed=0)
    assert m.auroc_ci == [1.0, 1.0] and m.tpr_at_1pct_fpr_ci == [1.0, 1.0]


def test_knowledge_curve_and_threshold_calibration():
    ratios = {"in1": np.array([3.0, 2.0, 4.0]), "in2": np.array([2.5, 3.5]),
              "out1": np.array([0.0, 1.0, -1.0]), "out2": np.array([0.5])}
    members = {"in1": True, "in2": True, "out1": False, "out2": False}
    curve = me.knowledge_curve(ratios, members, draws=5, seed=0)
    assert [p.m for p in curve] == [1, 2, 3] and [p.users_short for p in curve] == [0, 1, 2]
    assert all(p.auroc_mean == 1.0 and p.auroc_std == 0.0 for p in curve)
    known_out = np.arange(20.0)
    threshold = me.calibrate_threshold(known_out, 0.05)
    assert threshold == 18.0 and (known_out > threshold).sum() == 1
    assert me.calibrate_threshold(known_out[:5], 0.05) == 4.0  # too few: flags none of them


@pytest.mark.parametrize("field, value, message", [
    ("bootstrap", 3, "0 \\(no intervals\\) or from 10 to 100,000, not 3"),
    ("bootstrap", 200_000, "from 0 to 100,000"),
    ("calibration_fpr", 1.0, "above 0 and below 1"),
    ("knowledge_draws", -1, "from 0 to 10,000"),
    ("model", "", "choose a target model"),
])
def test_config_ranges_are_stated(field, value, message):
    values = dict(model="m", reference="r", data="d.csv") | {field: value}
    with pytest.raises(UserError, match=message):
        ui.UserInferenceConfig(**values)


# ---------------------------------------------------------------- data


@pytest.mark.parametrize("content, suffix, message", [
    ("user,text\na,hello\n", ".csv", "no column user_id"),
    ('{"user_id": "a"}\n', ".jsonl", "has no text column: found user_id; give a text"),
    ('{"user_id": "a", "text": "x"}\nnot json\n', ".jsonl", "not a valid .jsonl file"),
    ("user_id,text\na,hello\nb,  \n", ".csv", "row 3: user 'b' has an empty text"),
    ("user_id,text,member\na,x,true\na,y,false\nb,z,false\n", ".csv", "declared with member"),
    ("user_id,text,member\na,x,true\na,y,\nb,z,false\n", ".csv", "declared with member"),
    ("user_id,text,member\na,x,maybe\nb,z,false\n", ".csv", "row 2: member must be true or false"),
    ("user_id,text\na,x\na,y\n", ".csv", "needs at least two"),
    ("user_id,text\n,x\nb,y\n", ".csv", "row 2: empty user_id"),
    ('{"user_id": "a", "text": "x"}\n{"user_id": "b", "text": ""}\n', ".jsonl",
     "record 2: user 'b' has an empty text"),
])
def test_bad_data_is_a_clear_user_error(tmp_path, content, suffix, message):
    path = tmp_path / f"u{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        load_samples(str(path))


def test_csv_and_jsonl_parse_to_the_same_samples(tmp_path):
    (tmp_path / "u.csv").write_text('\ufeffuser_id,text,member\n7,"Hi, there",yes\n8,Bye,0\n8,Again,false\n',
                                    encoding="utf-8")  # with a BOM, as spreadsheets write it
    _write(tmp_path / "u.jsonl", [{"user_id": 7, "text": "Hi, there", "member": True},
                                  {"user_id": "8", "text": "Bye", "member": False},
                                  {"user_id": "8", "text": "Again", "member": "false"}])
    csv_samples = load_samples(str(tmp_path / "u.csv"))
    assert csv_samples == load_samples(str(tmp_path / "u.jsonl"))
    assert csv_samples[0] == Sample("7", "Hi, there", True, None)
    with pytest.raises(UserError, match="no such file"):
        load_samples(str(tmp_path / "missing.csv"))
    (tmp_path / "u.txt").write_text("x")
    with pytest.raises(UserError, match=".csv or .jsonl"):
        load_samples(str(tmp_path / "u.txt"))
    with pytest.raises(UserError, match="bootstrap"):
        ui.UserInferenceConfig(model="m", reference="r", data="d.csv", bootstrap=3)


# ---------------------------------------------------------------- canary users and mitigations


def test_canary_builder_inserts_one_substring_into_every_sample_of_chosen_users():
    samples = [Sample(f"u{u}", " ".join(f"w{u}.{i}.{k}" for k in range(6)), u % 2 == 0)
               for u in range(6) for i in range(4)]  # every word unique
    records, canaries = uc.build_canary_users(samples, words=3, count=2, seed=0)
    assert len(records) == len(samples) and len(canaries) == 2
    chosen = {c.user_id: c.substring for c in canaries}
    for sample, record in zip(samples, records):
        assert record["user_id"] == sample.user_id and record["member"] == sample.member
        if sample.user_id in chosen:
            assert record["canary"] and chosen[sample.user_id] in record["text"]
            words, inserted = record["text"].split(), chosen[sample.user_id].split()
            assert any(words[i: i + 3] == inserted and words[:i] + words[i + 3:] == sample.text.split()
                       for i in range(len(words)))  # the sample with the substring at one place
        else:
            assert not record["canary"] and record["text"] == sample.text
    for user, substring in chosen.items():
        assert len(substring.split()) == 3
        assert any(substring in s.text for s in samples if s.user_id == user)  # from their own data
    assert uc.build_canary_users(samples, words=3, count=2, seed=0) == (records, canaries)
    _, picked = uc.build_canary_users(samples, words=2, user_ids=["u5"])
    assert [c.user_id for c in picked] == ["u5"] and picked[0].samples == 4
    with pytest.raises(UserError, match="no sample of 40 words"):
        uc.build_canary_users(samples, words=40, user_ids=["u1"])
    with pytest.raises(UserError, match="7 canary users asked"):
        uc.build_canary_users(samples, words=3, count=7)


def test_insert_at_random_puts_the_substring_at_one_word_boundary():
    rng = random.Random(3)
    texts = {uc.insert_at_random("a b c", "X Y", rng) for _ in range(200)}
    assert texts == {"X Y a b c", "a X Y b c", "a b X Y c", "a b c X Y"}
    at = random.Random(0).randrange(4)   # one draw of the rng given: the boundary
    words = ["a", "b", "c"]
    assert uc.insert_at_random("a b c", "Z", random.Random(0)) == " ".join(words[:at] + ["Z"] + words[at:])


def test_canaries_spec_writes_the_copy_where_asked_or_under_the_home(tmp_path, lab_home):
    records = [{"user_id": f"u{u}", "text": f"the {u} words of sample {i} here", "member": u < 2}
               for u in range(4) for i in range(2)]
    data = _write(tmp_path / "u.jsonl", records)
    result = uc.run(uc.CanariesConfig(data=data, words=3, count=1, out=str(tmp_path / "c.csv")))
    assert result.out == str(tmp_path / "c.csv") and result.samples == 8
    assert sum(s.canary for s in load_samples(result.out)) == 2
    config = uc.CanariesConfig(data=data, words=3, users=("u1", "u2"))
    result = uc.run(config)
    assert Path(result.out).parent == lab_home / "user-inference" / "canary-copies"
    assert [c.user_id for c in result.canaries] == ["u1", "u2"]
    assert uc.run(config).out == result.out   # the same settings, the same copy
    with pytest.raises(UserError, match=".csv or .jsonl"):
        uc.CanariesConfig(data=data, out="copy.txt")
    with pytest.raises(UserError, match="choose a file of user samples"):
        uc.CanariesConfig()


def test_dedup_and_limit_act_within_each_user_only():
    records = [{"text": "a b c d e", "user_id": "x"}, {"text": "a b c d e", "user_id": "x"},
               {"text": "q a b c d r", "user_id": "x"}, {"text": "a b c d e", "user_id": "y"},
               {"text": "a b c d e", "user_id": None}, {"text": "a b c", "user_id": "x"}]
    deduped = dedup_within_user(records, words=4)
    assert [r["text"] for r in deduped] == ["a b c d e", "q r", "a b c d e", "a b c d e", "a b c"]
    limited = limit_per_user(records, limit=1)
    assert [(r["user_id"], r["text"]) for r in limited] == [("x", "a b c d e"), ("y", "a b c d e"),
                                                            (None, "a b c d e")]
    with pytest.raises(UserError, match="choose a mitigation"):
        whatif.MitigationConfig(dedup=False, per_user_limit=0)


def test_retraining_without_mitigation_reproduces_demo_updated(micro_demo, tmp_path):
    records = whatif.read_plain_records(scenario.data_file("private_train", micro_demo))
    steps = whatif.retrain_update(records, micro_demo, tmp_path / "again")
    assert steps == whatif.micro_demo_config().update_steps
    ours = load_file(str(tmp_path / "again" / "model.safetensors"))
    theirs = load_file(str(scenario.model_dir("updated", micro_demo) / "model.safetensors"))
    assert all(np.array_equal(ours[k].numpy(), theirs[k].numpy()) for k in theirs)


def test_canary_retrain_puts_one_substring_in_all_of_a_users_samples(micro_demo):
    config = whatif.CanaryRetrainConfig(words=5, per_side=1, bootstrap=0, demo_root=str(micro_demo))
    result = whatif.run_canary_retrain(config)
    manifest = scenario.load_manifest(micro_demo)
    held_in = {u.user_id for u in manifest.users.held_in}
    held_out = {u.user_id for u in manifest.users.held_out}
    old_canaries = {u.user_id for u in manifest.canary_users.held_in + manifest.canary_users.held_out}
    chosen = {c.user_id: c.substring for c in result.canaries}
    assert len(set(chosen) & held_in) == len(set(chosen) & held_out) == 1
    assert all(len(substring.split()) == 5 for substring in chosen.values())

    folder = Path(result.model_folder)
    trained = whatif.read_plain_records(folder / "private_train.jsonl")
    original = whatif.read_plain_records(scenario.data_file("private_train", micro_demo))
    assert len(trained) == len(original)
    for new, old in zip(trained, original):
        if new.get("user_id") in chosen:   # only the held-in canary user has training records
            assert new["user_id"] in held_in and chosen[new["user_id"]] in new["text"] != old["text"]
        else:
            assert new == old
    assert any(r.get("user_id") in chosen for r in trained)
    for sample in load_samples(str(folder / "user_samples.jsonl")):
        assert sample.canary == (sample.user_id in chosen or sample.user_id in old_canaries)
        assert sample.user_id not in chosen or chosen[sample.user_id] in sample.text

    assert [r.group for r in result.rows] == ["chosen users", "all", "real", "canary"]
    before = {r.user_id: r for r in result.baseline.rows}
    after = {r.user_id: r for r in result.attacked.rows}
    assert all(after[u].canary and not before[u].canary for u in chosen)
    assert result.baseline.samples == [] and result.attacked.samples == []  # results stay small
    assert whatif.run_canary_retrain(config).rows == result.rows   # cached, and deterministic
    assert from_jsonable(whatif.CanaryRetrainResult, to_jsonable(result)) == result
    with pytest.raises(UserError, match="real users have a sample of 100 words"):
        whatif.run_canary_retrain(whatif.CanaryRetrainConfig(words=100, demo_root=str(micro_demo)))


# ---------------------------------------------------------------- the attack on the tiny demo, CLI


def test_tiny_demo_bars_and_cli(tiny_demo, demo_models, capsys):
    data = str(scenario.data_file("user_samples", tiny_demo))
    code = main(["user-inference", "--model", demo_models[0], "--reference", demo_models[1],
                 "--data", data, "--bootstrap", "200", "--draws", "10", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and len(out["samples"]) == out["n_samples"]   # one output shape
    manifest = scenario.load_manifest(tiny_demo)
    n_users = sum(len(g.held_in) + len(g.held_out) for g in (manifest.users, manifest.canary_users))
    assert len(out["rows"]) == n_users
    assert out["auroc"] >= 0.75 and out["auroc_ci"][0] <= out["auroc"] <= out["auroc_ci"][1]
    real = next(m for m in out["metrics"] if m["group"] == "real")
    assert real["auroc"] >= 0.75
    assert {"tpr_at_1pct_fpr", "tpr_at_5pct_fpr", "tpr_at_1pct_fpr_ci", "tpr_at_5pct_fpr_ci"} <= set(out)
    assert [p["m"] for p in out["knowledge"]] == [1, 2, 3]
    assert out["threshold"] is not None and out["n_known_out"] == len(manifest.users.held_out) + 1
    assert main(["user-inference", "--model", demo_models[0], "--reference", demo_models[1],
                 "--data", "nope.csv", "--json"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["user-inference", "--data", data, "--json"]) == 2
    assert "choose a target model" in capsys.readouterr().err


def test_canary_cli_writes_a_copy(tiny_demo, tmp_path, capsys):
    data = str(scenario.data_file("user_samples", tiny_demo))
    out_file = tmp_path / "copy.csv"
    assert main(["user-inference-canaries", "--data", data, "--words", "4", "--count", "2",
                 "--out", str(out_file), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    copy, original = load_samples(str(out_file)), load_samples(data)
    assert len(copy) == summary["samples"] == len(original)
    assert sum(s.canary for s in copy) == sum(s.canary for s in original) + 2 * 3  # 3 samples each
    assert main(["user-inference-canaries", "--data", data, "--users", "nobody", "--json"]) == 2
    assert "no such user" in capsys.readouterr().err


def test_what_if_clis_retrain_the_installed_demo(micro_demo, lab_home, capsys):
    install_demo(micro_demo, lab_home)
    assert main(["user-inference-mitigate", "--no-dedup", "--per-user-limit", "1",
                 "--bootstrap", "20", "--json"]) == 0
    mitigated = json.loads(capsys.readouterr().out)
    assert mitigated["variant"] == "≤ 1 samples per user" and not mitigated["attacked"]["samples"]
    manifest = scenario.load_manifest(micro_demo)
    held_in = len(manifest.users.held_in) + len(manifest.canary_users.held_in)
    assert mitigated["user_samples_after"] == held_in < mitigated["user_samples_before"]
    assert mitigated["steps"] < whatif.micro_demo_config().update_steps
    assert mitigated["rows"][0]["baseline_auroc"] == mitigated["baseline"]["auroc"]
    assert mitigated["rows"][0]["variant_auroc"] == mitigated["attacked"]["auroc"]
    assert [r["group"] for r in mitigated["rows"]] == ["all", "real", "canary"]
    assert main(["user-inference-canary-retrain", "--per-side", "1", "--words", "4",
                 "--bootstrap", "0", "--json"]) == 0
    retrained = json.loads(capsys.readouterr().out)
    assert [c["words"] for c in retrained["canaries"]] == [4, 4]
    assert retrained["rows"][0]["group"] == "chosen users" and not retrained["baseline"]["samples"]
    assert main(["user-inference-canary-retrain", "--per-side", "0", "--json"]) == 2
    assert "canary users per side must be from 1 to 100, not 0" in capsys.readouterr().err


def test_every_phase_reports_progress_after_the_scoring():
    """Bootstrap and the knowledge curve say so on the bar, which then never stands silent."""
    reports = []
    ui.run(ui.tiny_config(), progress=lambda f, m="", partial=None: reports.append((f, m)))
    after_scoring = [(f, m) for f, m in reports if f > 0.85]
    messages = [m for _, m in after_scoring]
    assert any("bootstrap" in m for m in messages) and any("knowledge" in m for m in messages)
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
