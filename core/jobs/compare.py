"""Side-by-side comparison of two runs of one kind: their parameters and headline metrics."""

from __future__ import annotations

from typing import Any

from core.errors import UserError
from core.jobs.store import Run
from core.jobs.typed import load_result, spec_of


def flatten_scalars(value: Any, prefix: str = "") -> dict[str, Any]:
    """The scalar leaves of nested dicts, keyed by dotted path (lists are left out)."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(flatten_scalars(item, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        return {}
    return {prefix.rstrip("."): value} if prefix else {"value": value}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def diff_fields(a: Any, b: Any) -> list[dict]:
    """One row per scalar field of ``a`` or ``b``: its values, whether they are equal and b - a."""
    flat_a, flat_b = flatten_scalars(a), flatten_scalars(b)
    rows = []
    for field in sorted(flat_a.keys() | flat_b.keys()):
        va, vb = flat_a.get(field), flat_b.get(field)
        delta = vb - va if _is_number(va) and _is_number(vb) else None
        rows.append({"field": field, "a": va, "b": vb, "same": va == vb, "delta": delta})
    return rows


def headline(run: Run) -> dict[str, Any]:
    """The run's headline metrics: its spec's ``headline`` of the typed result, else the
    scalar fields of the stored result (or of its partial snapshot)."""
    spec, result = spec_of(run), load_result(run)
    if spec is not None and result is not None:
        return spec.headline(result)
    return flatten_scalars(run.result if run.result is not None else (run.partial or {}))


def compare_runs(a: Run, b: Run) -> dict:
    """Parameter differences and headline metrics of two runs of the same kind."""
    if a.kind != b.kind:
        raise UserError(f"run {a.id} is {a.kind} and run {b.id} is {b.kind}: only runs of one "
                        "kind can be compared")
    return {"a": a.summary(), "b": b.summary(), "params": diff_fields(a.params, b.params),
            "result": diff_fields(headline(a), headline(b))}
