"""Every registered attack runs its tiny config, returns a JSON-able dataclass, and stops when cancelled."""

import dataclasses
import json
import threading

import pytest

from core.attacks.registry import all_attacks
from core.runtime import Cancelled
from core.serialize import to_jsonable

SPECS = all_attacks()


def test_registry_names_are_unique_and_match_modules():
    from core.attacks.registry import ATTACK_MODULES
    assert len(SPECS) == len(ATTACK_MODULES)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_attack_runs_tiny_config(name):
    spec = SPECS[name]
    config = spec.tiny_config()
    assert isinstance(config, spec.config_type)
    reports = []
    result = spec.run(config, progress=lambda f, m="", partial=None: reports.append(f))
    assert dataclasses.is_dataclass(result)
    json.dumps(to_jsonable(result), allow_nan=False)
    assert reports and all(0.0 <= f <= 1.0 for f in reports)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_attack_stops_when_cancelled(name):
    spec = SPECS[name]
    cancel = threading.Event()
    cancel.set()
    try:
        result = spec.run(spec.tiny_config(), cancel=cancel)
    except Cancelled:
        return
    assert result.stopped_early
