"""The registry of attacks: one ``SPEC`` per module listed here. A test runs each one."""

from __future__ import annotations

import importlib

from core.attacks.base import AttackSpec

# Each module defines a module-level ``SPEC: AttackSpec``.
ATTACK_MODULES: tuple[str, ...] = (
    "core.labs.model_extraction",
    "core.labs.gradient_leakage",
    "core.labs.label_only_mi",
    "core.labs.trojan",
    "core.labs.contrastive_poisoning",
    "core.dp.ngram_canary",
    "core.dp.finetune",
    "core.attacks.extraction",
    "core.attacks.lazy_risk",
    "core.attacks.user_inference",
    "core.attacks.diffrank",
)


def all_attacks() -> dict[str, AttackSpec]:
    """Name -> spec for every registered attack."""
    specs = (importlib.import_module(m).SPEC for m in ATTACK_MODULES)
    return {spec.name: spec for spec in specs}


def get_attack(name: str) -> AttackSpec:
    attacks = all_attacks()
    if name not in attacks:
        from core.errors import UserError
        raise UserError(f"unknown attack {name!r}; known: {', '.join(sorted(attacks))}")
    return attacks[name]
