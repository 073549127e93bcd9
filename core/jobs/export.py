"""Runs and results as files: the whole run as JSON, or a result's main table as CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterator

from core.errors import UserError
from core.jobs.store import Run
from core.serialize import to_jsonable


def export_json(source: Run | Any) -> str:
    """A run (all its fields) or a bare result as indented JSON."""
    value = source.to_dict() if isinstance(source, Run) else to_jsonable(source)
    return json.dumps(value, indent=2, allow_nan=False, default=str)


def result_table(result: Any, table: str | None = None) -> list[dict]:
    """The main table of a result, as a list of rows; used for CSV.

    In order: the records under ``table`` (a spec names its main table), else under a top-level
    ``"rows"`` key; else the largest table found anywhere
    in the result (most rows, then most columns), where a table is either a list of dicts
    (records) or the lists of scalars of equal length inside one dict (columns, e.g. the
    ``fpr`` and ``tpr`` arrays of a ROC curve); else one row of the top-level scalar fields.
    """
    result = to_jsonable(result)
    for name in (table, "rows"):
        if name and isinstance(result, dict) and _is_records(result.get(name)):
            return result[name]
    tables = list(_find_tables(result))
    if tables:
        return max(tables, key=lambda t: (len(t), len(t[0])))
    if isinstance(result, dict):
        scalars = {k: v for k, v in result.items() if not isinstance(v, (dict, list))}
        if scalars:
            return [scalars]
    raise UserError("this result has no table to export as CSV; download it as JSON instead")


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _is_scalars(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and not any(isinstance(v, (dict, list)) for v in value))


def _find_tables(value: Any) -> Iterator[list[dict]]:
    if _is_records(value):
        yield value
    if isinstance(value, dict):
        columns: dict[int, dict[str, list]] = {}
        for key, item in value.items():
            if _is_scalars(item):
                columns.setdefault(len(item), {})[key] = item
        for group in columns.values():
            yield [dict(zip(group, row)) for row in zip(*group.values())]
    if isinstance(value, (dict, list)):
        for child in value.values() if isinstance(value, dict) else value:
            yield from _find_tables(child)


def export_csv(source: Run | Any, table: str | None = None) -> str:
    """The main table (see ``result_table``) of a run's result (else its partial) as CSV."""
    if isinstance(source, Run):
        source = source.result if source.result is not None else source.partial
    rows = result_table(source, table)
    fields = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v
                         for k, v in row.items()})
    return out.getvalue()
