"""What an audit costs: the work of each of its attacks, from the cost that attack's spec
declares (``AttackSpec.cost``), priced before Run by ``core.cost.estimate`` and, once the model
is loaded, at the pace measured on it (``core.cost.pace``): each attack's part of the audit's
progress bar is its expected seconds, so that the bar moves at an even pace and the ETA
extrapolated from it (``RunSummary.eta_s``) holds. An attack whose spec declares no cost (a
plug-in's) is named, not priced, and gets the mean of the others' parts.
"""

from __future__ import annotations

from typing import Any

from core.cost import Plan, plan_of, priced
from core.registry import get_spec

FLOOR = 0.01   # the least part of the bar an attack gets, so that every part shows


def audit_plan(config) -> Plan:
    """Each chosen attack's work, as the audit configures it (``core.audit.plan``)."""
    from core.audit import plan as audit_plan

    plan = Plan()
    for name in config.chosen():
        attack = plan_of(get_spec(name), audit_plan.attack_config(name, config))
        if attack is None:
            plan.assumptions.append(f"{name}: no estimate (its spec declares no cost)")
        else:
            plan.add(attack)
    return plan


def series_plan(config) -> Plan:
    plan = Plan(assumptions=["each checkpoint's audit as one audit"])
    for checkpoint in config.checkpoints:
        plan.add(audit_plan(config.audit_config(checkpoint)))
    return plan


def expected_seconds(configs: dict[str, Any], device: str, pace_of) -> dict[str, float]:
    """Each attack's expected seconds on ``device`` (``configs``: attack -> its config), its
    scoring and generation at the pace ``pace_of(generates)`` measures on the loaded model
    (generation's pace only when some attack generates); each at least ``FLOOR`` of the
    whole."""
    plans = {name: plan_of(get_spec(name), c) for name, c in configs.items()}
    generates = any(w.kind == "generate" for p in plans.values() if p for w in p.works)
    pace = pace_of(generates)
    seconds = {name: priced(name, p, device, pace).seconds
               for name, p in plans.items() if p is not None}
    even = sum(seconds.values()) / len(seconds) if seconds else 1.0
    seconds = {name: seconds.get(name, even) for name in configs}
    floor = FLOOR * sum(seconds.values())
    return {name: max(s, floor, 1e-9) for name, s in seconds.items()}
