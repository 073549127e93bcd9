"""A LoRA adapter's base is the reference when none is given: the CLI's attacks and audit, and
every config that takes a reference, use it; a reference given, or extraction's explicit "none",
is kept."""

import json

import pytest

from conftest import TINY_TEXTS
from core.__main__ import main
from core.attacks.diffrank.config import DiffRankConfig
from core.attacks.extraction.config import ExtractionConfig
from core.attacks.lazy_risk.config import LazyRiskConfig
from core.attacks.user_inference.config import UserInferenceConfig
from core.attacks.user_inference.samples import write_samples
from core.audit.audit import AuditConfig
from core.models import load_model
from modelfiles import clean_models  # noqa: F401


@pytest.fixture(scope="module")
def adapter(tiny_lm_dir, tmp_path_factory):
    """An untrained rank-4 LoRA adapter of the tiny GPT-2, saved by PEFT: it records the
    tiny GPT-2's folder as its base."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    config = LoraConfig(r=4, target_modules=["c_attn"], fan_in_fan_out=True)
    folder = tmp_path_factory.mktemp("lora")
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_lm_dir), config).save_pretrained(
        folder, safe_serialization=True)
    return folder


@pytest.fixture
def samples(tmp_path):
    """Six users with three samples each (three held in), as user inference reads them."""
    path = tmp_path / "users.jsonl"
    path.write_text(write_samples([{"user_id": f"u{u}", "text": TINY_TEXTS[(u + i) % 5],
                                    "member": u < 3} for u in range(6) for i in range(3)],
                                  "jsonl"), encoding="utf-8")
    return path


def test_the_cli_attack_without_a_reference_uses_the_adapters_base(adapter, tiny_lm_dir,
                                                                      samples, capsys):
    code = main(["user-inference", "--model", str(adapter), "--data", str(samples),
                 "--bootstrap", "20", "--draws", "0", "--device", "cpu", "--no-record", "--json"])
    assert code == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["reference"] == str(tiny_lm_dir) and result["n_users"] == 6


def test_the_audit_without_a_reference_runs_the_attacks_that_need_one(adapter, tiny_lm_dir,
                                                                       samples, capsys):
    code = main(["audit", "--model", str(adapter), "--users", str(samples),
                 "--attacks", "user-inference", "--set", "user-inference.bootstrap=20",
                 "--set", "user-inference.knowledge_draws=0", "--device", "cpu", "--no-record",
                 "--json"])
    assert code == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["reference"] == str(tiny_lm_dir)
    [entry] = result["entries"]
    assert entry["status"] == "done" and entry["config"]["reference"] == str(tiny_lm_dir)


def test_every_config_with_a_reference_takes_the_base_of_a_loaded_adapter(adapter, tiny_lm_dir,
                                                                         samples):
    load_model(str(adapter), name="my-lora", device="cpu")
    base = str(tiny_lm_dir)
    assert UserInferenceConfig(model="my-lora", data=str(samples)).reference == base
    assert ExtractionConfig(model="my-lora").reference == base
    assert LazyRiskConfig(model="my-lora", train=str(samples)).calibration == base
    assert DiffRankConfig(after="my-lora").before == base
    assert AuditConfig(model="my-lora").reference == base
    # a reference given is kept; extraction's empty string is the page's "no reference"
    assert UserInferenceConfig(model="my-lora", reference="other", data="x").reference == "other"
    assert ExtractionConfig(model="my-lora", reference="").reference is None
    assert UserInferenceConfig(model=base, reference="r", data="x").reference == "r"


def test_on_a_page_the_reference_moves_to_the_base_of_an_adapter_picked_as_the_target(
        adapter, tiny_lm_dir, monkeypatch):
    from pagetest import page_app

    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tiny_lm_dir.parent))  # the base: a folder it may read
    load_model(str(adapter), name="my-lora", device="cpu")
    at = page_app("app_pages/audit.py").run()
    at.selectbox(key="audit-model").set_value("my-lora").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="audit-reference").value == str(tiny_lm_dir)
    assert any(c.value == f"reference: the adapter's base {tiny_lm_dir}" for c in at.caption)
