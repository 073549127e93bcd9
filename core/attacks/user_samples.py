"""User samples for user inference (Kandpal et al. 2023): read, check, group and write them.

A user-samples file holds one record per sample with the columns ``user_id`` and ``text``, and
optionally ``member`` (held-in: true, held-out: false, empty: unknown) and ``canary`` (a canary
user, §4.3). Files are read by ``core.data`` (CSV, JSON, JSONL, or a named data source).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.data import data_file, read_records
from core.errors import UserError

TRUE = {"true", "1", "yes", "y", "t", "in", "member"}
FALSE = {"false", "0", "no", "n", "f", "out", "non-member", "nonmember"}


@dataclass(frozen=True)
class Sample:
    user_id: str
    text: str
    member: bool | None = None   # held-in / held-out; None: unknown
    canary: bool | None = None   # optional: a canary user (Kandpal §4.3)


def _cell(value):
    """A record's value as a plain Python value; a missing one (None, NaN) is None."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _parse_bool(value, what: str, where: str) -> bool | None:
    value = _cell(value)
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("", "nan", "none", "null"):
        return None
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise UserError(f"{where}: {what} must be true or false (or empty when unknown), not {value!r}")


def _user_id(value) -> str:
    value = _cell(value)
    if isinstance(value, float) and value.is_integer():  # a JSON column of ids with gaps
        value = int(value)
    return "" if value is None else str(value).strip()


def parse_samples(table: pd.DataFrame, *, csv_rows: bool = False) -> list[Sample]:
    """Samples from a table of records with ``user_id``, ``text``, optional ``member`` and
    ``canary``; ``csv_rows`` numbers rows as a spreadsheet does (the header is row 1). Bad
    input raises ``UserError``: an empty ``user_id`` or ``text``; a user declared
    inconsistently (the same ``user_id`` both member and non-member, or labelled on some rows
    and not on others, or both canary and not); fewer than two users."""
    samples = []
    for n, row in enumerate(table.to_dict("records")):
        where = f"row {n + 2}" if csv_rows else f"record {n + 1}"
        user, text = _user_id(row.get("user_id")), _cell(row.get("text"))
        if not user:
            raise UserError(f"{where}: empty user_id")
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"{where}: user {user!r} has an empty text; fill it or remove the row")
        samples.append(Sample(user, text, _parse_bool(row.get("member"), "member", where),
                              _parse_bool(row.get("canary"), "canary", where)))
    by_user = group_by_user(samples)
    for user, items in by_user.items():
        for attr in ("member", "canary"):
            values = {getattr(s, attr) for s in items}
            if len(values) > 1:
                raise UserError(f"user {user!r} is declared with {attr} = "
                                f"{' and '.join(sorted(map(str, values)))} on different rows: one user "
                                "id must have one label (rename one of the users if they differ)")
    if len(by_user) < 2:
        raise UserError(f"the data holds {len(by_user)} user(s); user inference needs at least two")
    return samples


def load_samples(source: str) -> list[Sample]:
    """``parse_samples`` of a file or named data source (``core.data.read_records``)."""
    table = read_records(source, required=("user_id", "text"))
    return parse_samples(table, csv_rows=data_file(source).suffix.lower() == ".csv")


def group_by_user(samples: list[Sample]) -> dict[str, list[Sample]]:
    """Samples by user id, in first-seen order."""
    users: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        users[s.user_id].append(s)
    return dict(users)


def write_samples(records: list[dict], fmt: str) -> str:
    """Records (dicts with user_id, text, ...) as CSV or JSONL text."""
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in records)
    out = io.StringIO()
    fields = list(dict.fromkeys(k for r in records for k in r))
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()
