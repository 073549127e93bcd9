"""User samples for user inference (Kandpal et al. 2023): read, check, group and write them.

A user-samples file holds one record per sample with the column ``user_id``, its text, and
optionally ``member`` (held-in: true, held-out: false, empty: unknown) and ``canary`` (a canary
user, §4.3). The text is a ``text``, or a fine-tuner's row (``core.chat``: ``messages``, prompt
and completion, or a preference row), rendered with the target's chat template and scored on
the tokens training learnt from. Files are read by ``core.readers.data`` (CSV, JSON, JSONL, Parquet, a
``datasets`` folder, or a named data source).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import dataclass, replace

from core import chat
from core.readers.data import cell, parse_bool
from core.errors import DataError

LABELS = ("user_id", "member", "canary")


@dataclass(frozen=True)
class Sample:
    user_id: str
    text: str
    member: bool | None = None   # held-in / held-out; None: unknown
    canary: bool | None = None   # optional: a canary user (Kandpal §4.3)
    ids: tuple[int, ...] = ()          # a rendered row: its tokens,
    trained: tuple[bool, ...] = ()     # and those training learnt from


def _user_id(value) -> str:
    value = cell(value)
    if isinstance(value, float) and value.is_integer():  # a JSON column of ids with gaps
        value = int(value)
    return "" if value is None else str(value).strip()


def parse_samples(records: list[dict], *, csv_rows: bool = False,
                  rendered: list[chat.Rendered] | None = None) -> list[Sample]:
    """Samples from records with ``user_id``, ``text``, optional ``member`` and ``canary``
    (``rendered``: the sequence each was rendered as); ``csv_rows`` numbers rows as a
    spreadsheet does (the header is row 1). Bad
    input raises ``DataError``: an empty ``user_id`` or ``text``; a user declared
    inconsistently (the same ``user_id`` both member and non-member, or labelled on some rows
    and not on others, or both canary and not); fewer than two users."""
    samples = []
    for n, row in enumerate(records):
        line = rendered[n].row if rendered else n
        where = f"row {line + 2}" if csv_rows else f"record {line + 1}"
        user, text = _user_id(row.get("user_id")), cell(row.get("text"))
        if not user:
            raise DataError(f"{where}: empty user_id")
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{where}: user {user!r} has an empty text; fill it or remove the row")
        samples.append(Sample(user, text, parse_bool(row.get("member"), "member", where),
                              parse_bool(row.get("canary"), "canary", where)))
        if rendered:
            samples[-1] = replace(samples[-1], ids=tuple(rendered[n].ids),
                                  trained=tuple(rendered[n].trained.tolist()))
    by_user = group_by_user(samples)
    for user, items in by_user.items():
        for attr in ("member", "canary"):
            values = {getattr(s, attr) for s in items}
            if len(values) > 1:
                raise DataError(f"user {user!r} is declared with {attr} = "
                                f"{' and '.join(sorted(map(str, values)))} on different rows: one user "
                                "id must have one label (rename one of the users if they differ)")
    if len(by_user) < 2:
        raise DataError(f"the data holds {len(by_user)} user(s); user inference needs at least two")
    return samples


def read_samples(source: str, mask: str = "auto") -> chat.RowsTable:
    """The records of a user-samples file and their dataset type (before any model loads)."""
    return chat.read_rows(source, labels=LABELS, mask=mask)


def rendered_samples(table: chat.RowsTable, target=None, *, mask: str = "auto",
                     template: str = "") -> list[Sample]:
    """``parse_samples`` of the table's plain texts, or of its rows rendered with ``target``'s
    template."""
    if not table.rendered:
        return parse_samples(table.records, csv_rows=table.csv_rows)
    rendered = table.render(target, mask=mask, template=template)
    return parse_samples(table.labelled(rendered), csv_rows=table.csv_rows, rendered=rendered)


def load_samples(source: str) -> list[Sample]:
    """``parse_samples`` of a file or named data source, a fine-tuner's rows as their turns'
    contents (``core.readers.rows.plain_texts``: a preview or an estimate, before the model loads)."""
    table = read_samples(source)
    return parse_samples(table.unrendered(), csv_rows=table.csv_rows)


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
