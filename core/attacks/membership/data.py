"""The labelled texts of a membership-inference run: read, checked, de-duplicated.

A file (CSV, JSON, JSONL, Parquet, a ``datasets`` folder or a named data source, read by
``core.readers.data``) holds one record per text with ``member`` (true: in the training set, false:
not), optionally ``group`` (e.g. the source or the date bucket: metrics are then also given per
group), and its text as one of TRL's dataset types (``core.chat``): a ``text``, or a
conversation (``messages``), a prompt-completion or a preference row, rendered with the target's
chat template and scored on the tokens training learnt from (a preference row: its chosen and
its rejected completion, two texts of its label).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core import chat
from core.readers.data import cell, parse_bool
from core.errors import DataError

MIN_PER_CLASS = 2
LABELS = ("member", "group")


@dataclass(frozen=True)
class LabelledText:
    text: str
    member: bool
    group: str = ""
    ids: tuple[int, ...] = ()          # a rendered row: its tokens,
    trained: tuple[bool, ...] = ()     # and those training learnt from


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
        raise DataError(f"{where}: empty text; fill it or remove the row")
    member = parse_bool(row.get("member"), "member", where)
    if member is None:
        raise DataError(f"{where}: member is empty; every text needs true (in the training set) "
                        "or false")
    group = cell(row.get("group"))
    return LabelledText(text, member, "" if group is None else str(group).strip())


def parse_labelled(rows: list[dict], *, csv_rows: bool = False,
                   rendered: list[chat.Rendered] | None = None) -> LabelledSet:
    """Checked labelled texts: a text given both as member and non-member is an error, one given
    twice with the same label is kept once, and each class needs at least ``MIN_PER_CLASS``.
    ``rendered``: the sequences the rows were rendered as, one per row."""
    seen: dict[str, LabelledText] = {}
    dropped = 0
    for n, row in enumerate(rows):
        line = rendered[n].row if rendered else n
        where = f"row {line + 2}" if csv_rows else f"record {line + 1}"
        item = _record(row, where)
        if rendered:
            item = replace(item, ids=tuple(rendered[n].ids),
                           trained=tuple(rendered[n].trained.tolist()))
        if item.text in seen:
            if seen[item.text].member != item.member:
                raise DataError(f"{where}: the text {item.text[:60]!r} is labelled both member and "
                                "non-member; one text must have one label")
            dropped += 1
            continue
        seen[item.text] = item
    labelled = LabelledSet(list(seen.values()), dropped)
    if min(labelled.members, labelled.non_members) < MIN_PER_CLASS:
        raise DataError(f"membership inference needs at least {MIN_PER_CLASS} members and "
                        f"{MIN_PER_CLASS} non-members, got {labelled.members} and "
                        f"{labelled.non_members}")
    return labelled


def read_labelled(source: str, mask: str = "auto") -> chat.RowsTable:
    """The records of a labelled file and their dataset type (before any model loads)."""
    return chat.read_rows(source, labels=LABELS, mask=mask)


def labelled_texts(table: chat.RowsTable, target=None, *, mask: str = "auto",
                   template: str = "") -> LabelledSet:
    """``parse_labelled`` of the table's plain texts, or of its rows rendered with ``target``'s
    template (each text then holds its tokens and the mask of those training learnt from)."""
    if not table.rendered:
        return parse_labelled(table.records, csv_rows=table.csv_rows)
    rendered = table.render(target, mask=mask, template=template)
    return parse_labelled(table.labelled(rendered), csv_rows=table.csv_rows, rendered=rendered)


def load_labelled(source: str) -> LabelledSet:
    """``parse_labelled`` of a file or named data source of plain texts."""
    return labelled_texts(read_labelled(source))
