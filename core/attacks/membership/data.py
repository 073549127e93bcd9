"""The labelled texts of a membership-inference run: read, checked, de-duplicated.

A file (CSV, JSON, JSONL or a named data source, read by ``core.data``) holds one record per
text with ``text`` and ``member`` (true: in the training set, false: not), and optionally
``group`` (e.g. the source or the date bucket: metrics are then also given per group).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.data import cell, data_file, parse_bool, read_records
from core.errors import UserError

MIN_PER_CLASS = 2


@dataclass(frozen=True)
class LabelledText:
    text: str
    member: bool
    group: str = ""


@dataclass
class LabelledSet:
    texts: list[LabelledText]
    duplicates_dropped: int    # repeated (text, label) records kept once

    @property
    def members(self) -> int:
        return sum(t.member for t in self.texts)

    @property
    def non_members(self) -> int:
        return len(self.texts) - self.members

    def groups(self) -> list[str]:
        return sorted({t.group for t in self.texts if t.group})


def _record(row: dict, where: str) -> LabelledText:
    text = cell(row.get("text"))
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: empty text; fill it or remove the row")
    member = parse_bool(row.get("member"), "member", where)
    if member is None:
        raise UserError(f"{where}: member is empty; every text needs true (in the training set) "
                        "or false")
    group = cell(row.get("group"))
    return LabelledText(text, member, "" if group is None else str(group).strip())


def parse_labelled(rows: list[dict], *, csv_rows: bool = False) -> LabelledSet:
    """Checked labelled texts: a text given both as member and non-member is an error, one given
    twice with the same label is kept once, and each class needs at least ``MIN_PER_CLASS``."""
    seen: dict[str, LabelledText] = {}
    dropped = 0
    for n, row in enumerate(rows):
        where = f"row {n + 2}" if csv_rows else f"record {n + 1}"
        item = _record(row, where)
        if item.text in seen:
            if seen[item.text].member != item.member:
                raise UserError(f"{where}: the text {item.text[:60]!r} is labelled both member and "
                                "non-member; one text must have one label")
            dropped += 1
            continue
        seen[item.text] = item
    labelled = LabelledSet(list(seen.values()), dropped)
    if min(labelled.members, labelled.non_members) < MIN_PER_CLASS:
        raise UserError(f"membership inference needs at least {MIN_PER_CLASS} members and "
                        f"{MIN_PER_CLASS} non-members, got {labelled.members} and "
                        f"{labelled.non_members}")
    return labelled


def load_labelled(source: str) -> LabelledSet:
    """``parse_labelled`` of a file or named data source."""
    table = read_records(source, required=("text", "member"))
    return parse_labelled(table.to_dict("records"),
                          csv_rows=data_file(source).suffix.lower() == ".csv")
