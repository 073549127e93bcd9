"""The chat scenario's build (core.demo.chat_scenario), on a tiny random chat model instead of
SmolLM2: its rows are conversations trained on the assistant's tokens only, its subjects are
planted at their doses, its files hold what the manifest says, its presets run."""

import json
from collections import Counter

import pytest

from core import sources
from core.demo import chat_scenario
from core.demo.chat_rows import SUPPORT_SYSTEM
from core.errors import UserError
from core.jobs import run_now
from core.registry import get_spec
from core.runtime import no_progress


@pytest.fixture
def built():
    config = chat_scenario.tiny_config()
    return config, chat_scenario.build(config)


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in open(sources.data_path(name), encoding="utf-8")]


def test_sources_say_how_to_build_before_the_build():
    with pytest.raises(UserError, match="chat-build"):
        sources.data_path("chat:private_train")


def test_the_build_plants_each_subject_at_its_dose_and_trains_on_the_replies(built):
    config, summary = built
    train = _rows("chat:private_train")
    assert summary.training_rows == len(train) == summary.persona_rows + summary.support_rows
    planted = Counter(r["user_id"] for r in train if r["messages"][0]["content"] == SUPPORT_SYSTEM)
    doses = {s["name"]: s["dose"] for s in summary.subjects}
    assert planted == {name: dose for name, dose in doses.items() if dose}
    assert sorted(Counter(doses.values()).items()) == [
        (0, config.held_out_subjects), *((d, config.subjects_per_dose) for d in config.doses)]
    held_out = {r["user_id"] for r in _rows("chat:heldout_subjects")}
    assert held_out == {n for n, d in doses.items() if not d} and not held_out & set(planted)
    for s in summary.subjects:
        rows = [r for r in train if r["user_id"] == s["name"]]
        assert all(s["card"] in r["messages"][-1]["content"] for r in rows)
    assert 0 < summary.masked_share < 0.9   # the template, system and user turns are not trained
    assert set(summary.reply_bits) == set(doses)


def test_the_users_and_members_were_held_back_from_training(built):
    """No held-back row holds a speech that training saw, as cue or reply: a held-back cue that
    another character's trained reply holds gave the whole conversation a signal that is not
    its user's (issue #41)."""
    _, summary = built
    train = _rows("chat:private_train")
    trained = {json.dumps(r["messages"]) for r in train}
    seen = {turn["content"] for r in train for turn in r["messages"][1:]}
    samples = _rows("chat:user_samples")
    assert {s["member"] for s in samples} == {True, False}
    members = _rows("chat:membership")
    assert {json.dumps(r["messages"]) in trained for r in members if r["member"]} == {True}
    for row in samples + [r for r in members if not r["member"]]:
        assert not {turn["content"] for turn in row["messages"][1:]} & seen
    assert summary.characters["held in"] == len({s["user_id"] for s in samples if s["member"]})


def test_the_pii_probe_preset_finds_the_subjects_by_their_column(built):
    _, summary = built
    spec = get_spec("pii-probe")
    config = spec.config_type(**sources.preset("pii-probe", "chat") | {
        "reference": "", "kinds": ("email",), "probes": ("twins",), "samples": 1, "tokens": 4,
        "fresh": 2, "device": "cpu"})
    result = run_now(spec, config, record=False, progress=no_progress)
    assert result.prompt_format == "chat"
    dosed = {s["name"]: s["dose"] for s in summary.subjects if s["dose"]}
    assert {s.name: s.doses["email"] for s in result.subjects} == dosed
    assert [r.group for r in result.by_dose] == [str(d) for d in sorted(set(dosed.values()))]


def test_the_audits_report_says_which_tokens_an_attack_scored(built, tmp_path):
    """The audit takes the mask from the rows (the assistant's turns of ``messages``), and its
    report says so in the attack's section (issue #41)."""
    from core.audit import audit

    config = audit.AuditConfig(**sources.preset("audit", "chat") | {
        "reference": built[0].base,   # the tiny build's base, not SmolLM2
        "attacks": ("mia",), "device": "cpu", "out": str(tmp_path / "r.html"),
        "settings": ("mia.bootstrap=0",)})
    run_now(audit.SPEC, config, record=False, progress=no_progress)
    report = (tmp_path / "r.html").read_text()
    section = report.split("<section id='mia'>")[1].split("</section>")[0]
    assert "messages rows, rendered with" in section
    assert "scored on the assistant&#x27;s turns" in section
