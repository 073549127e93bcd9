"""Issue #42, B1: an audited attack a third party registers after the audit was imported (no
cost, no audit seconds declared) joins the audit's default plan, is accepted by ``--attacks``,
runs through the CLI with the others and is named, not priced, by the estimate before Run."""

import dataclasses
import json

import pytest

import audited_toy
from core import cost
from core.__main__ import main
from core.audit import audit, plan
from core.errors import UserError


@pytest.fixture
def toy_registered(monkeypatch):
    audited_toy.register(monkeypatch)   # core.audit.audit is imported already


def test_it_joins_the_default_plan_and_its_name_is_checked_when_the_config_is(toy_registered):
    everything = dataclasses.replace(audit.tiny_config(), attacks=())
    assert "toy-audited" in plan.available(everything)
    assert "toy-audited" in everything.chosen()
    with pytest.raises(UserError, match="attacks: choose one of .*toy-audited.*, not 'nope'"):
        dataclasses.replace(everything, attacks=("mia", "nope"))


def test_the_estimate_prices_the_others_and_names_it(toy_registered, lab_home):
    config = dataclasses.replace(audit.tiny_config(), attacks=("mia", "toy-audited"))
    estimate = cost.estimate(audit.SPEC, config)
    assert estimate.seconds > 0
    assert "toy-audited: no estimate (its spec declares no cost)" in estimate.assumptions


def test_the_audit_cli_runs_it_after_the_others_with_its_verdict(toy_registered, lab_home,
                                                                 capsys):
    assert main(["audit", "--tiny", "--attacks", "mia", "toy-audited", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert [e["attack"] for e in entries] == ["mia", "toy-audited"]
    assert [e["status"] for e in entries] == ["done", "done"]
    assert entries[1]["verdict"].startswith("mean loss ") and entries[1]["headline"]["mean_loss"] > 0
