"""Every registered spec: it runs its tiny config, its result round-trips through the store's
JSON as its typed result, and it stops when cancelled at its first progress report."""

import dataclasses
import json
import threading

import pytest

from core import registry
from core.runtime import Cancelled
from core.serialize import from_jsonable, to_jsonable

NAMES = sorted(registry.ENTRIES)


@pytest.fixture
def spec(request, demo_home):
    """The spec, with the tiny demo installed (the what-ifs retrain it)."""
    return registry.get_spec(request.param)


def test_each_entry_names_the_spec_it_points_to():
    for name in NAMES:
        assert registry.get_spec(name).name == name
    for alias, name in registry.ALIASES.items():
        assert registry.get_spec(alias) is registry.get_spec(name)


@pytest.mark.parametrize("spec", NAMES, indirect=True)
def test_spec_runs_its_tiny_config_and_round_trips(spec):
    config = spec.tiny_config()
    assert isinstance(config, spec.config_type)
    assert from_jsonable(spec.config_type, to_jsonable(config)) == config
    reports = []
    result = spec.run(config, progress=lambda f, m="", partial=None: reports.append(f))
    assert isinstance(result, spec.result_type)
    stored = json.loads(json.dumps(to_jsonable(result), allow_nan=False))
    assert to_jsonable(from_jsonable(spec.result_type, stored)) == stored
    assert reports and all(0.0 <= f <= 1.0 for f in reports)
    assert all(isinstance(v, (int, float)) for v in spec.headline(result).values())
    assert isinstance(spec.uses_gpu(config), bool)


@pytest.mark.parametrize("spec", [   # a domain reference made earlier is cached: nothing to stop
    pytest.param(n, marks=pytest.mark.fresh_cache) if n == "domain-reference" else n for n in NAMES],
    indirect=True)
def test_spec_stops_when_cancelled_at_its_first_progress_report(spec):
    cancel = threading.Event()
    reports = []

    def progress(fraction, message="", partial=None):
        reports.append(fraction)
        cancel.set()

    try:
        result = spec.run(spec.tiny_config(), progress=progress, cancel=cancel)
    except Cancelled:
        return
    assert reports, "the spec never reported progress"
    assert result.stopped_early, "the spec ignored the cancel set at its first progress report"


def test_every_config_field_has_help():
    for name in NAMES:
        config_type = registry.get_spec(name).config_type
        missing = [f.name for f in dataclasses.fields(config_type) if "help" not in f.metadata]
        assert not missing, f"{name}: fields without param(help=...): {missing}"


def test_a_family_cannot_take_a_service_name_or_alias():
    service = registry.SERVICES["audit-series"]
    family = {"audit-series": registry.Entry("core.attacks.mia", "a family's spec"),
              "other": registry.Entry("core.attacks.mia", "another", ("checkpoint-audit",))}
    for name in family:
        with pytest.raises(ValueError, match="already registered"):
            registry.merged({name: family[name]}, {"audit-series": service})
    assert registry.merged(registry.family_entries(), registry.SERVICES) == registry.ENTRIES
