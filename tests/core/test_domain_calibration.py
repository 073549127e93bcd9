"""Domain calibration (issue #19): on a synthetic fine-tune with a known answer, the gain over the
base ranks the domain's boilerplate first and the planted record last; the gain over the domain
reference (the base fine-tuned on public in-domain text) ranks the record first. The reference
is cached by the base, the sample's content and the settings, trained on a fresh copy of the
base, LoRA merged into plain weights."""

import dataclasses
import json
import threading

import numpy as np
import pytest
import torch

from bench.domain_synthetic import AUTO_REPLY, build_synthetic_case
from core import paths
from core.__main__ import main
from core.calibration import config as calibration_config
from core.calibration import domain
from core.calibration import reference as domain_reference
from core.errors import UserError
from core.models import load_model
from core.models.loaders import load_source
from core.runtime import Cancelled
from core.scoring import score_texts
from core.scoring.threads import is_small_on_cpu, one_thread

REFERENCE = dict(steps=100, lr=3e-3, batch_size=16, max_tokens=48, eval_every=10, weights="all",
                 device="cpu")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The synthetic case and its domain reference (about 10 s), in a home of their own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(tmp_path_factory.mktemp("domain-home")))
        built = build_synthetic_case()
        reference = domain.domain_reference(built.base, built.public_file, **REFERENCE)
    return built, reference


def _scores(source: str, texts: list[str]):
    lm = load_model(source, device="cpu")
    with one_thread(is_small_on_cpu(lm.model)):  # tiny matrices: threads only fight over a busy CPU
        return score_texts(lm, texts)


def _ranks(values) -> np.ndarray:
    """1 for the highest value."""
    return np.argsort(np.argsort(-np.asarray(values))) + 1


def test_gain_over_the_base_ranks_boilerplate_first_and_over_the_reference_the_record(case):
    built, reference = case
    texts = list(built.training_texts)
    record = texts.index(built.record)
    tuned, base, ref = (_scores(s, texts) for s in (built.finetuned, built.base, reference))
    over_base = [np.mean(a.logprobs - b.logprobs) for a, b in zip(tuned, base)]
    over_reference = [np.mean(a.logprobs - b.logprobs) for a, b in zip(tuned, ref)]
    assert _ranks(over_base)[record] > len(texts) // 2
    top = [texts[i] for i in np.argsort(over_base)[::-1][:10]]
    assert all(AUTO_REPLY in text for text in top)  # a third of the texts: boilerplate but a number
    assert _ranks(over_reference)[record] == 1


def test_dc_pdd_frequency_math_lives_in_the_membership_scores_only():
    """DC-PDD's token frequencies and score are ``core.attacks.membership.scores``'s (issue #27): the
    domain module's copy (log(1/f) where the suite has log f), used by no spec, is gone."""
    from core.attacks.membership import scores as mia_scores

    assert not hasattr(domain, "frequency_gain") and not hasattr(domain, "log_inverse_frequency")
    assert calibration_config.CALIBRATIONS == ("none", "domain-reference")
    assert callable(mia_scores.dc_pdd) and callable(mia_scores.log_token_frequencies)


def _reference_folders(home) -> list[str]:
    root = home / "models" / "domain"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


@pytest.mark.fresh_cache
def test_second_request_returns_the_cached_folder_without_training(monkeypatch):
    config = domain_reference.tiny_config()
    first = domain_reference.run(config)
    monkeypatch.setattr(domain_reference, "fine_tune", lambda *a, **k: pytest.fail("trained"))
    again = domain_reference.run(config)
    assert (first.cached, again.cached) == (False, True)
    assert again.folder == first.folder
    assert dataclasses.replace(again, cached=False) == first


@pytest.mark.fresh_cache
def test_cache_key_follows_the_sample_content_not_its_path(tmp_path, lab_home):
    config = domain_reference.tiny_config()
    texts = json.loads(open(config.sample, encoding="utf-8").read())
    first = domain_reference.run(config)
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps(texts), encoding="utf-8")
    assert domain_reference.run(dataclasses.replace(config, sample=str(copy))).cached
    copy.write_text(json.dumps(texts[:-1] + ["Ticket 99: all fine. Kind regards, support."]))
    changed = domain_reference.run(dataclasses.replace(config, sample=str(copy)))
    assert not changed.cached and changed.folder != first.folder
    more_steps = domain_reference.run(dataclasses.replace(config, steps=6))
    assert not more_steps.cached and more_steps.folder != first.folder
    assert len(_reference_folders(lab_home)) == 3


def test_reference_is_trained_on_a_copy_and_learns_the_sample(lab_home):
    config = domain_reference.tiny_config()
    loaded = load_model(config.base, name="base-in-use", device="cpu")
    before = [p.detach().clone() for p in loaded.model.parameters()]
    result = domain_reference.run(dataclasses.replace(config, base="base-in-use"))
    assert all(torch.equal(a, b) for a, b in zip(before, loaded.model.parameters()))
    assert result.base == config.base  # the loaded name resolves to its source
    assert result.heldout_loss_reference < result.heldout_loss_base
    assert (result.sample_texts, result.heldout_texts, result.lora) == (11, 1, False)


def test_lora_reference_is_saved_merged_as_a_plain_model():
    config = dataclasses.replace(domain_reference.tiny_config(), weights="lora", lr=5e-2,
                                 steps=6)
    result = domain_reference.run(config)
    assert result.lora
    saved = (paths.cache_home() / "models" / "domain").rglob("*")
    assert not any(p.name.startswith("adapter") for p in saved)
    reference, _, _ = load_source(result.folder, dtype=torch.float32)
    base, _, _ = load_source(config.base, dtype=torch.float32)
    assert reference.num_parameters() == base.num_parameters()
    assert not all(torch.equal(a, b) for a, b in zip(reference.parameters(), base.parameters()))


@pytest.mark.fresh_cache
def test_cancelled_training_caches_nothing(lab_home):
    cancel = threading.Event()
    with pytest.raises(Cancelled):
        domain_reference.run(domain_reference.tiny_config(),
                             progress=lambda *a, **k: cancel.set(), cancel=cancel)
    assert _reference_folders(lab_home) == []


def test_calibrate_reference_says_which_calibration_was_used():
    config = domain_reference.tiny_config()
    same, none = domain.calibrate_reference(config.base, " ")
    assert same == config.base and none.method == "none"
    settings = dict(steps=4, batch_size=4, eval_every=2, lr=1e-2, weights="all", device="cpu")
    folder, used = domain.calibrate_reference(config.base, config.sample, **settings)
    assert used.method == "domain-reference" and used.reference == folder != config.base
    assert "11 public in-domain texts" in used.summary and "held-out loss" in used.summary
    assert domain.domain_reference(config.base, config.sample, **settings) == folder


def test_a_sample_too_small_is_refused_with_the_minimum(tmp_path):
    sample = tmp_path / "small.txt"
    sample.write_text("one ticket\nanother ticket\n", encoding="utf-8")
    config = dataclasses.replace(domain_reference.tiny_config(), sample=str(sample))
    with pytest.raises(UserError, match="holds 2 texts: at least 10"):
        domain_reference.run(config)


def test_cli_trains_the_reference_and_prints_its_folder(capsys):
    config = domain_reference.tiny_config()
    argv = ["domain-reference", "--base", config.base, "--sample", config.sample, "--steps", "4",
            "--batch-size", "4", "--eval-every", "2", "--lr", "0.01", "--weights", "all",
            "--device", "cpu", "--no-record", "--json"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["folder"].startswith(str(paths.cache_home() / "models" / "domain"))
    assert printed["heldout_loss_reference"] < printed["heldout_loss_base"]
