"""The data subjects of a training set and the PII it holds for each (ProPILE's data subjects:
a name and the values written beside it).

A row belongs to a subject when it names them (or its subject column does); of each kind of
PII in a subject's rows (``core.pii``), the value in the most rows is theirs, written as the
data writes it the first time, and its dose is the number of those rows. Without names, the
subjects are the capitalised first-and-last names beside PII: in its turn (its line), else in
its row.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pandas as pd

from core.readers import rows
from core.attacks.pii_probe.config import SubjectFound
from core.readers.data import data_file, read_table
from core.errors import DataError, NotApplicable
from core.pii import find_pii

NAME = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+(?:-[A-Z][a-z]+)?\b")
OPENERS = {"Hi", "Hello", "Hey", "Dear", "Thanks", "Thank", "Yes", "No", "Sure", "The", "My",
           "Mr", "Mrs", "Ms", "Dr", "Please", "Good", "Welcome", "Of", "Okay", "Great"}


def row_texts(source: str, subject_column: str = "") -> list[tuple[str | None, str]]:
    """(the subject column's value or None, the row's whole text) for each row of ``source``:
    every turn of a conversation, prompt and completions, or a plain text."""
    table = read_table(source)
    if isinstance(table, list):
        if subject_column:
            raise DataError(f"{data_file(source).name} holds plain texts, with no column "
                            f"{subject_column!r}")
        return [(None, text) for text in table if text.strip()]
    if subject_column and subject_column not in table.columns:
        raise DataError(f"{data_file(source).name} has no column {subject_column!r} (its "
                        f"columns: {', '.join(map(str, table.columns))})")
    kind = "text" if "text" in table.columns else rows.table_kind(table.columns,
                                                                   data_file(source).name)
    owners = (table[subject_column].map(_owner).tolist() if subject_column
              else [None] * len(table))
    return [(owners[row], text) for row, text in rows.plain_texts(table.to_dict("records"), kind)]


def _owner(value) -> str | None:
    value = rows.cell(value)
    return None if value is None or pd.isna(value) else str(value).strip() or None


def guess_names(texts: list[tuple[str | None, str]], region: str) -> list[str]:
    """Capitalised first-and-last names beside PII, the most frequent first: those on a line
    (a turn) that holds PII, else anywhere in a row that does (a sentence opener such as "Hello"
    is not taken for a first name)."""
    counts: Counter = Counter()
    for _, text in texts:
        lines = [line for line in text.splitlines() if find_pii(line, region)]
        names = {m for line in lines for m in NAME.findall(line)} or (
            set(NAME.findall(text)) if lines else set())
        counts.update({m for m in names if m.split()[0] not in OPENERS})
    return [name for name, _ in counts.most_common()]


def find_subjects(texts: list[tuple[str | None, str]], names: list[str], *, by_column: bool,
                  kinds: tuple[str, ...], region: str, limit: int) -> list[SubjectFound]:
    """Each named subject with PII in their rows, those with the most rows first, at most
    ``limit``; a row is theirs when its subject column is the name (``by_column``) or it holds
    the name."""
    found = []
    for name in dict.fromkeys(names):
        own = [text for owner, text in texts if (owner == name if by_column else name in text)]
        subject = _subject(name, own, kinds, region)
        if subject is not None:
            found.append(subject)
    found.sort(key=lambda s: (-s.rows, s.name))
    return found[:limit]


def _subject(name: str, texts: list[str], kinds: tuple[str, ...],
             region: str) -> SubjectFound | None:
    doses: dict[str, Counter] = defaultdict(Counter)
    written: dict[tuple[str, str], str] = {}
    for text in texts:
        found = [p for p in find_pii(text, region) if p.kind in kinds]
        for pii in found:
            written.setdefault((pii.kind, pii.value), text[pii.start:pii.end])
        for kind, value in {(p.kind, p.value) for p in found}:
            doses[kind][value] += 1
    if not doses:
        return None
    top = {kind: counts.most_common(1)[0] for kind, counts in doses.items()}
    return SubjectFound(name, len(texts), {k: written[(k, v)] for k, (v, _) in top.items()},
                        {k: n for k, (_, n) in top.items()})


def subjects_of(config) -> tuple[list[SubjectFound], int, list[str]]:
    """The config's subjects, the rows read and the notes on how they were found."""
    texts = row_texts(config.data, config.subject_column.strip())
    notes = []
    if config.subjects:
        names, by_column = [n.strip() for n in config.subjects if n.strip()], False
    elif config.subject_column.strip():
        names, by_column = [o for o, _ in texts if o], True
    else:
        names, by_column = guess_names(texts, config.region), False
        notes.append("subjects found as capitalised first-and-last names beside PII in a turn: "
                     "list the data subjects for a complete probe")
    subjects = find_subjects(texts, names, by_column=by_column, kinds=config.kinds,
                             region=config.region, limit=config.max_subjects)
    if not subjects:
        raise NotApplicable(f"no data subject with PII of the kinds {', '.join(config.kinds)} was "
                        f"found in {data_file(config.data).name}: name the subjects as the data "
                        "writes them, or give the subject column")
    return subjects, len(texts), notes
