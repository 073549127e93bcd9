"""The realistic scenario's build (core.demo.realistic), on a tiny random base instead of SmolLM2:
its files hold what the manifest says, its sources resolve, and a second build is the cache."""

import json
from collections import Counter

import pytest

from core import sources
from core.attacks.user_inference.samples import load_samples
from core.readers.data import read_texts
from core.demo import realistic
from core.demo.config import SECRET_PROMPT
from core.errors import UserError


@pytest.fixture
def built():
    config = realistic.tiny_config()
    return config, realistic.build(config)


def test_sources_say_how_to_build_before_the_build():
    with pytest.raises(UserError, match="realistic-build"):
        sources.data_path("realistic:public_sample")


def test_the_build_plants_what_its_manifest_says(built):
    config, summary = built
    train = [json.loads(line) for line in
             open(sources.data_path("realistic:private_train"), encoding="utf-8")]
    kinds = Counter(row["kind"] for row in train)
    assert kinds["secret"] == config.secret_count
    assert [row["text"] for row in train].count(summary.secret) == config.secret_count
    for phrase, count in summary.canaries:
        assert [row["text"] for row in train].count(phrase) == count
    assert summary.training_texts == len(train)
    for user, substring in summary.canary_users.items():
        assert all(substring in row["text"] for row in train if row["user_id"] == user)
    assert set(summary.surprisal_bits) == {summary.secret, *(p for p, _ in summary.canaries)}


def test_the_public_sample_and_the_test_set_were_never_trained_on(built):
    _, summary = built
    trained = set(read_texts(str(sources.data_path("realistic:private_train"))))
    public = read_texts(str(sources.data_path("realistic:public_sample")))
    test = read_texts(str(sources.data_path("realistic:test")))
    assert len(public) == realistic.tiny_config().public_sample
    assert public and test and not trained & set(public) and not trained & set(test)
    samples = load_samples(str(sources.data_path("realistic:user_samples")))
    members = {s.user_id for s in samples if s.member}
    assert members and {s.user_id for s in samples if not s.member}
    assert all(s.text not in trained for s in samples)
    assert (sources.model_path("realistic:updated") / "model.safetensors").exists()


def test_a_second_build_of_the_same_config_is_the_cache(built):
    config, summary = built
    messages = []
    again = realistic.build(config, progress=lambda f, m="", partial=None: messages.append(m))
    assert again == summary and messages == ["realistic scenario already built"]
    assert realistic.RealisticConfig(seed=1).config_hash() != config.config_hash()


def test_the_technical_scenario_is_python_docs_with_all_weights_trained():
    """The second scenario: another domain (Python's documentation, topics as users), every
    weight fine-tuned, the same plants, its own folder and sources beside the realistic one."""
    config = realistic.tiny_config(realistic.TechnicalConfig)
    assert (config.corpus, config.lora_rank, config.scenario) == ("python-docs", 0, "technical")
    summary = realistic.build(config)
    assert summary.root.endswith("technical") and "pydoc_data" in summary.text_source["package"]
    train = read_texts(str(sources.data_path("technical:private_train")))
    assert train.count(summary.secret) == config.secret_count
    public = read_texts(str(sources.data_path("technical:public_sample")))
    assert public and not set(train) & set(public)
    assert any('"' in text and "()" in text for text in public)   # documentation, not plays
    assert all(user.startswith(tuple(summary.plays["private"])) for user in summary.canary_users)
    with pytest.raises(UserError, match="realistic-build"):
        sources.data_path("realistic:public_sample")      # the other scenario is not built
    assert realistic.RealisticConfig().config_hash() == "3e102a573a304ce1"   # plays' builds kept


def test_the_shift_scenario_plants_every_copy_inside_a_trained_speech(capsys):
    """Issue #45, through the recorded CLI run: each copy of a plant is a line of a held-in
    user's speech, never the text's start (where the paper's beam begins); all weights trained;
    the build records the held-out loss (the trained plays' other speeches, and the public
    sample) before and after, and the run is in the store."""
    from core.__main__ import main
    from core.jobs import Store

    config = realistic.tiny_config(realistic.ShiftConfig)
    assert (config.corpus, config.lora_rank, config.inside_speeches) == ("plays", 0, True)
    assert main(["shift-build", "--base", config.base, "--epochs", str(config.epochs),
                 "--max-tokens", str(config.max_tokens), "--public-sample",
                 str(config.public_sample), "--device", "cpu", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["root"].endswith("shift")
    assert [r.kind for r in Store().summaries()][:1] == ["shift-build"]
    train = [json.loads(line) for line in
             open(sources.data_path("shift:private_train"), encoding="utf-8")]
    assert summary["training_texts"] == len(train)
    plants = {summary["secret"]: config.secret_count, **dict(summary["canaries"])}
    for plant, count in plants.items():
        holding = [row for row in train if plant in row["text"]]
        assert len(holding) == count
        assert all(f"\n{plant}" in row["text"] and row["user_id"] for row in holding)
    assert len(summary["heldout_loss"]) == len(summary["public_loss"]) == 2
    assert min(summary["heldout_loss"] + summary["public_loss"]) > 0


def test_the_estimate_before_run_trains_the_steps_the_build_takes_then_nothing():
    """``--dry-run`` / the page's estimate: the build's own step count before it is built, and
    no training once it is (the cached build is reused)."""
    from core import cost
    from core.registry import get_spec

    spec, config = get_spec("realistic-build"), realistic.tiny_config()
    before = cost.estimate(spec, config)
    summary = realistic.build(config)
    assert any(f"{summary.steps} steps x 8" in what for what, _ in before.parts)
    after = cost.estimate(spec, config)
    assert not after.parts and "not trained again" in " ".join(after.assumptions)


def test_the_inextractability_preset_measures_the_builds_plants_and_its_run(built):
    """``--preset realistic``: the canaries after their first word, the build's own secret
    digits after the prompt, and the fine-tune's q and steps for the bound."""
    config, summary = built
    preset = sources.preset("inextractability", "realistic")
    pairs = list(zip(preset["prefixes"], preset["suffixes"]))
    assert (SECRET_PROMPT, summary.secret.removeprefix(SECRET_PROMPT)) in pairs
    assert [p + s for p, s in pairs[:-1]] == [phrase for phrase, _ in summary.canaries]
    assert preset["q"] == pytest.approx(config.batch_size / summary.training_texts, rel=1e-3)
    assert preset["steps"] == summary.steps


@pytest.mark.parametrize("command, folder", [("technical-build --corpus plays", "technical"),
                                             ("realistic-build --corpus python-docs", "realistic")])
def test_each_build_owns_its_scenario_folder_whatever_the_corpus(command, folder, monkeypatch):
    """Issue #42, B4: ``technical-build --corpus plays`` wrote all-weight models into
    ``realistic``, replacing the LoRA build its presets and figures assume (and the reverse)."""
    import core.jobs
    from core.__main__ import main

    configs = []

    def reached(spec, config, *args, **kwargs):
        configs.append(config)
        raise LookupError("reached")   # stop before any work

    monkeypatch.setattr(core.jobs, "run_now", reached)
    with pytest.raises(LookupError, match="reached"):
        main(command.split())
    assert [c.scenario for c in configs] == [folder]
    assert realistic.realistic_root(configs[0].scenario).name == folder
