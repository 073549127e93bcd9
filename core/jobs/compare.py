"""Side-by-side comparison of two runs: their parameters and the scalar fields of their results."""

from __future__ import annotations

from typing import Any

from core.jobs.store import Run


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


def compare_runs(a: Run, b: Run) -> dict:
    """Parameter and result differences of runs ``a`` and ``b`` (a partial result if no result)."""
    def outcome(run: Run) -> Any:
        return run.result if run.result is not None else (run.partial or {})

    return {"a": a.summary(), "b": b.summary(), "params": diff_fields(a.params, b.params),
            "result": diff_fields(outcome(a), outcome(b))}
