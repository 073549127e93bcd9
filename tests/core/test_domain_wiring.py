"""Domain calibration wired into the attacks that compare two models (issue #19): with a
public in-domain sample, the model each compares with is the domain reference trained from the
model given (cached under the lab home), the result says so, and the CLI offers the option."""

import dataclasses
import functools
import threading

import pytest

from core import paths, registry
from core.__main__ import main
from core.attacks.diffrank import spec as diffrank
from core.attacks.extraction import spec as extraction
from core.attacks.lazy_risk import spec as lazy_risk
from core.attacks.membership import mia
from core.attacks.user_inference import spec as user_inference
from core.calibration import domain
from core.calibration import reference as domain_reference
from core.errors import UserError
from core.jobs import Store, load_result, run_now
from core.models import resolve_model
from core.runtime import Cancelled, no_progress
from pagetest import page_app
from ui.text import plain

# at most 30 characters, so at most 31 tokens with the context token: the tiny models' context
# is 32, and the reference's training does not cut a text to the model's context (yet)
SAMPLE_TEXTS = [f"Ticket {n}: {thing} broken." for n, thing in
                enumerate(("printer", "router", "laptop", "phone") * 3)]

# per attack: (its module, the config field the domain reference replaces, the result's
# calibration, the source of the model the result compared with)
ATTACKS = {
    "diffrank": (diffrank, "before", lambda r: r.calibration, lambda r: r.before),
    "lazy-risk": (lazy_risk, "calibration", lambda r: r.domain_calibration,
                  lambda r: resolve_model(r.calibration).source),
    "extraction": (extraction, "reference", lambda r: r.calibration,
                   lambda r: resolve_model(r.reference).source),
    "user-inference": (user_inference, "reference", lambda r: r.calibration,
                       lambda r: r.reference),
    "mia": (mia, "reference", lambda r: r.calibration, lambda r: resolve_model(r.reference).source),
}


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "public-domain.txt"
    path.write_text("\n".join(SAMPLE_TEXTS), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", ATTACKS)
def test_the_domain_sample_replaces_the_compared_model_by_its_domain_reference(name, sample):
    module, role, calibration_of, compared = ATTACKS[name]
    config = module.tiny_config()
    uncalibrated = module.run(config)
    assert calibration_of(uncalibrated).method == "none"
    given = getattr(config, role)
    assert compared(uncalibrated) == resolve_model(given).source

    calibrated = dataclasses.replace(config, domain_sample=sample, domain_steps=2)
    result = run_now(module.SPEC, calibrated, progress=no_progress)
    used = calibration_of(result)
    assert used.method == "domain-reference" and used.sample == sample
    assert used.reference.startswith(str(paths.cache_home() / "models" / "domain"))
    assert compared(result) == used.reference != compared(uncalibrated)
    assert given in used.summary and "public in-domain texts" in used.summary

    [run] = Store().runs(name)  # the report says which calibration was used
    assert run.title.endswith("domain-calibrated on public-domain.txt")
    assert calibration_of(load_result(run)) == used
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    assert plain(used.summary) in [c.value for c in at.caption]


@pytest.mark.fresh_cache
def test_the_reference_training_takes_the_first_share_of_the_progress_bar(sample):
    reports = []
    config = dataclasses.replace(user_inference.tiny_config(), domain_sample=sample,
                                 domain_steps=2)
    user_inference.run(config, progress=lambda f, m="", partial=None: reports.append((f, m)))
    assert any("step 2/2" in m for _, m in reports)  # the training's own reports
    training = [f for f, m in reports if m.startswith("domain calibration: ")]
    attack = [f for f, m in reports if not m.startswith("domain calibration: ")]
    assert training and max(training) <= domain.CALIBRATION_SHARE
    assert min(attack) >= domain.CALIBRATION_SHARE and attack[-1] == 1.0
    assert [f for f, _ in reports] == sorted(f for f, _ in reports)


@pytest.mark.fresh_cache
def test_cancelling_during_the_reference_training_stops_the_attack(sample, lab_home):
    cancel = threading.Event()
    config = dataclasses.replace(lazy_risk.tiny_config(), domain_sample=sample, domain_steps=50)
    with pytest.raises(Cancelled):
        lazy_risk.run(config, progress=lambda *a, **k: cancel.set(), cancel=cancel)
    assert not [p for p in (lab_home / "models" / "domain").glob("*") if p.is_dir()]


def test_diffrank_swap_compares_the_update_with_the_domain_reference(sample):
    config = dataclasses.replace(diffrank.tiny_config(), domain_sample=sample, domain_steps=2,
                                 swap=True, strategy="beam", phrase="")
    result = diffrank.run(config)
    assert result.after == result.calibration.reference  # the roles exchanged after calibrating
    assert result.before == resolve_model(config.after).source


def test_extraction_refuses_a_domain_sample_without_a_reference_model(sample, capsys):
    config = extraction.tiny_config()
    with pytest.raises(UserError, match="calibrates the reference model: choose one"):
        dataclasses.replace(config, reference=None, domain_sample=sample)
    assert main(["extraction", "--model", config.model, "--domain-sample", sample,
                 "--no-record"]) == 2
    assert "calibrates the reference model" in capsys.readouterr().err


def test_domain_steps_are_range_checked_as_the_reference_spec_checks_them():
    steps = {f.name: f for f in dataclasses.fields(domain_reference.DomainReferenceConfig)}["steps"]
    for name in ATTACKS:
        config_type = registry.get_spec(name).config_type
        field = {f.name: f for f in dataclasses.fields(config_type)}["domain_steps"]
        assert field.default == steps.default
        assert (field.metadata["ge"], field.metadata["le"]) == (steps.metadata["ge"],
                                                                steps.metadata["le"])
    with pytest.raises(UserError, match="domain reference steps must be from 0 to 100,000"):
        dataclasses.replace(user_inference.tiny_config(), domain_steps=-1)


def test_steps_not_given_are_sized_for_the_device_and_key_the_cache(tiny_lm_dir, tmp_path,
                                                                    monkeypatch):
    """0 steps: 12 on a CPU (minutes for a 135M model), 200 on a GPU; given steps are kept,
    and the resolved number is what the cache key and the cost estimate see."""
    import torch

    from core.calibration.config import CPU_DOMAIN_STEPS, DOMAIN_STEPS

    sample = tmp_path / "public.txt"
    sample.write_text("\n".join(f"public text number {i}" for i in range(20)))
    make = functools.partial(domain_reference.DomainReferenceConfig, base=str(tiny_lm_dir),
                             sample=str(sample))
    on_cpu = make(device="cpu")
    assert on_cpu.steps == CPU_DOMAIN_STEPS and make(device="cpu", steps=7).steps == 7
    assert domain_reference.reference_key(on_cpu) == domain_reference.reference_key(
        make(device="cpu", steps=CPU_DOMAIN_STEPS))
    monkeypatch.setattr(domain_reference, "resolve_device", lambda device: torch.device("cuda"))
    assert make(device="cuda").steps == DOMAIN_STEPS
    assert user_inference.tiny_config().domain_steps == 0   # the attacks pass 0 through


@pytest.mark.parametrize("name", ATTACKS)
def test_each_command_offers_the_domain_sample(name, capsys):
    with pytest.raises(SystemExit):
        main([name, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--domain-sample" in text and "--domain-steps" in text
    assert "not its training set" in text
