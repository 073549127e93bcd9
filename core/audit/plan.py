"""Which attacks an audit runs, each one's config, and its verdict in plain words.

An attack runs when the audit has what it needs (``AuditHooks.needs``, declared beside its
spec). Its config is the attack's own defaults, then its preset's settings (``core.sources``)
when the audit's reference and files are that preset's (the demo's settings for the demo's data:
e.g. 8-token verification spans for its short planted sentences), then the audit's models, files
and seed.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from core import registry, sources
from core.cli_input import read_value
from core.errors import UserError
from core.registry import get_spec
from core.specs import AuditHooks


def steps() -> dict[str, AuditHooks]:
    """Name -> audit hooks of every registered spec that declares them (``AttackSpec.audit``;
    registered ``audited``, so that no other spec is imported), in the audit's order; the
    plug-ins loaded first (a lookup would load them mid-loop)."""
    registry.load_plugins()
    found = {name: get_spec(name).audit for name, entry in list(registry.ENTRIES.items())
             if entry.audited}
    return dict(sorted(((n, h) for n, h in found.items() if h is not None),
                       key=lambda item: item[1].order))


def available(audit) -> list[str]:
    """The attacks whose inputs the audit has, in the report's order."""
    return [name for name, step in steps().items()
            if all(str(getattr(audit, f)).strip() for f in step.needs)]


DATA_INPUTS = ("corpus", "users", "members")   # the audit's files, each read by some attacks


def unused_inputs(audit) -> list[str]:
    """A note naming the files given to ``audit`` (an audit or a series) that none of its chosen
    attacks reads, e.g. ``["not used: users (no chosen attack reads it)"]``; [] if none."""
    read = {source for name in audit.chosen() for source in steps()[name].fields.values()}
    unused = [f for f in DATA_INPUTS if str(getattr(audit, f)).strip() and f not in read]
    if not unused:
        return []
    return [f"not used: {', '.join(unused)} (no chosen attack reads "
            f"{'it' if len(unused) == 1 else 'them'})"]


def _preset_for(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """The settings of the attack's preset whose reference and files agree with ``values`` ({}
    if none): they suit the data, whichever model was trained on it (e.g. a LoRA adapter fine-
    tuned on the demo's data); the training run's σ, q and steps are not compared. The preset's
    models, files and run parameters are never added."""
    compared = {k: v for k, v in values.items()
                if steps()[name].fields[k] in ("reference", *DATA_INPUTS)}
    for preset in sources.preset_names(name):
        chosen = sources.preset(name, preset)
        if compared and all(chosen.get(k) == v for k, v in compared.items()):
            return {k: v for k, v in chosen.items() if k not in steps()[name].fields}
    return {}


def parse_settings(settings: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``("extraction.n_samples=300", ...)`` -> ``{"extraction": {"n_samples": "300"}}``; a
    ``UserError`` for a setting of no known attack or no such field."""
    parsed: dict[str, dict[str, str]] = {}
    for setting in settings:
        target, equals, value = setting.partition("=")
        attack, dot, field = target.strip().partition(".")
        if not equals or not dot or attack not in steps():
            raise UserError(f"a setting is ATTACK.FIELD=VALUE with ATTACK one of "
                            f"{', '.join(steps())}, not {setting!r}")
        if field == "device":
            raise UserError(f"{setting!r}: the audit's device (--device) is every attack's, so "
                            "that none runs elsewhere")
        names = {f.name for f in dataclasses.fields(get_spec(attack).config_type)} - {"device"}
        if field not in names or field in steps()[attack].fields:
            raise UserError(f"{attack} has no setting {field!r} the audit may change: "
                            f"{', '.join(sorted(names - set(steps()[attack].fields)))}")
        parsed.setdefault(attack, {})[field] = value
    return parsed


def _typed(spec, settings: dict[str, str]) -> dict[str, Any]:
    hints, typed = typing.get_type_hints(spec.config_type), {}
    for field, text in settings.items():
        try:
            typed[field] = read_value(hints[field], text)
        except (ValueError, TypeError) as err:
            raise UserError(f"{field}: {err}") from None
    return typed


def attack_config(name: str, audit) -> Any:
    """The config of attack ``name`` in ``audit``: defaults, preset, the audit's models, files,
    seed and device (every attack that loads a model has a ``device``), then the audit's
    settings of that attack (``--set ATTACK.FIELD=VALUE``, never the device)."""
    spec = get_spec(name)
    values = {field: getattr(audit, source) for field, source in steps()[name].fields.items()
              if str(getattr(audit, source)).strip()}
    fields = {f.name for f in dataclasses.fields(spec.config_type)}
    common = {k: v for k, v in (("seed", audit.seed), ("device", audit.device)) if k in fields}
    changed = _typed(spec, parse_settings(audit.settings).get(name, {}))
    return spec.config_type(**_preset_for(name, values) | values | common | changed)
