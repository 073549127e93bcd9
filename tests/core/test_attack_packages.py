"""The attack families as packages: every registered spec has a renderer, every spec the audit
may run declares complete audit hooks beside it, a third-party spec joins with ``register``,
and the membership attacks' names and needs come from one table."""

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from core import registry
from core.attacks.membership import config as mia_config
from core.attacks.membership import scores
from core.audit import audit, plan, series
from core.specs import AttackSpec, AuditHooks
from ui.render import renderer

AUDIT_INPUTS = {f.name for f in dataclasses.fields(audit.AuditConfig)}


def test_every_registered_spec_has_a_renderer():
    missing = [name for name in registry.ENTRIES if renderer(name) is None]
    assert missing == [], f"specs without a renderer in ui/render/: {missing}"


def test_every_audit_capable_spec_declares_complete_hooks_beside_it():
    hooks = plan.steps()
    assert list(hooks) == ["extraction", "inextractability", "diffrank", "pii-probe",
                           "user-inference", "mia", "lazy-risk", "nid-audit"]
    for name, hook in hooks.items():
        spec = registry.get_spec(name)
        package = registry.ENTRIES[name].module.rsplit(".", 1)[0]
        config_fields = {f.name for f in dataclasses.fields(spec.config_type)}
        assert "model" in hook.needs and set(hook.needs) <= AUDIT_INPUTS, name
        assert set(hook.fields) <= config_fields and set(hook.fields.values()) <= AUDIT_INPUTS
        assert set(hook.needs) <= set(hook.fields.values()), name
        assert hook.series and all(isinstance(t, str) and t for t in hook.series.values())
        for function in (hook.verdict, hook.section):
            assert function.__module__.startswith(package + "."), f"{name}: {function} elsewhere"
    attacks = next(f for f in dataclasses.fields(audit.AuditConfig) if f.name == "attacks")
    assert attacks.metadata["choices"]() == tuple(hooks)   # asked when a config is checked
    assert series.series_metrics() == {name: hook.series for name, hook in hooks.items()}


def test_the_registry_marks_exactly_the_specs_with_audit_hooks():
    """The audit imports only the entries marked ``audited``: a spec with hooks left unmarked
    would silently drop out of the audit."""
    with_hooks = {name for name in registry.ENTRIES if registry.get_spec(name).audit is not None}
    assert with_hooks == {name for name, e in registry.ENTRIES.items() if e.audited}


def test_hooks_that_name_a_missing_field_or_input_are_refused():
    spec = registry.get_spec("extraction")
    hooks = spec.audit
    with pytest.raises(TypeError, match="no config field"):
        dataclasses.replace(spec, audit=dataclasses.replace(hooks, fields={"nope": "model"}))
    with pytest.raises(TypeError, match="unmapped"):
        AuditHooks(("model", "users"), {"model": "model"}, str, str, {"x": "x"})


def test_a_third_party_spec_joins_with_register(monkeypatch):
    monkeypatch.setattr(registry, "ENTRIES", dict(registry.ENTRIES))
    monkeypatch.setattr(registry, "ALIASES", dict(registry.ALIASES))
    registry.register("toy", "toy_spec", "a toy", aliases=("toy-alias",),
                      renderer="ui.render.exposure")
    spec = registry.get_spec("toy-alias")
    assert isinstance(spec, AttackSpec) and spec.name == "toy" and spec.audit is None
    assert renderer("toy") is renderer("exposure")
    with pytest.raises(ValueError, match="already registered: mia"):
        registry.register("mia", "toy_spec", "a second mia")
    with pytest.raises(ValueError, match="toy-alias"):
        registry.register("other", "toy_spec", "taken alias", aliases=("toy-alias",))


def test_membership_attack_names_and_needs_come_from_one_table():
    assert typing.get_args(mia_config.AttackName) == tuple(scores.ATTACKS)
    assert {a.needs for a in scores.ATTACKS.values()} - {None} <= set(scores.NEEDS)
    bare = mia_config.MiaConfig(model="m", data="d.csv", recall_shots=0)
    assert {need: bare.given(need) for need in scores.NEEDS} == {
        "reference": False, "lowercase": True, "prefixed": False, "frequency": False}
    assert bare.chosen() == [n for n, a in scores.ATTACKS.items() if a.needs in (None, "lowercase")]


def _tables_keyed_by_spec_name(path: Path, names: set[str]) -> list[int]:
    """Lines of ``path`` where a dict literal has two or more registered spec names as keys
    (but a family's ``ATTACKS``: its own entries, which the registry reads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)
           and [getattr(t, "id", "") for t in node.targets] == ["ATTACKS"]}
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Dict)
            and id(node) not in own
            and sum(isinstance(k, ast.Constant) and k.value in names for k in node.keys) >= 2]


def test_no_table_keyed_by_spec_name_outside_the_registry():
    """Issue #42: what an attack needs (its cost, audit hooks, page fields, renderer) is on its
    spec or its registry entry, never in a table elsewhere keyed by its name (the audit's
    seconds and the estimators were two). The demo's presets are exempt: they are a scenario's
    data (the values it gives each attack), registered by the demo plug-in."""
    from core.registry import ENTRIES

    root = Path(__file__).parents[2]
    exempt = {root / "core" / "registry.py", root / "core" / "demo" / "presets.py"}
    found = {str(path.relative_to(root)): lines
             for folder in ("core", "ui", "app_pages") for path in (root / folder).rglob("*.py")
             if path not in exempt
             and (lines := _tables_keyed_by_spec_name(path, set(ENTRIES)))}
    assert not found, found
