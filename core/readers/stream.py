"""Data files read as a stream, bounded while they are read (``core.readers.data``'s parsers).

Reading a whole file into one string and parsing it at once took ~35 times the file's size
before any count was checked (a 100 MB file: 3.5 GB). Here ``.txt``, ``.jsonl`` and ``.csv`` files
are read line by line (``.csv`` through pandas in chunks of rows), each line checked as it comes:
at most ``LEAKAGE_LAB_MAX_ROW_BYTES``, UTF-8, no NUL byte (a refusal names the line), and the rows
kept are counted against ``LEAKAGE_LAB_MAX_ROWS``. A ``.json`` array is parsed whole, so it is
capped lower (``LEAKAGE_LAB_MAX_JSON_BYTES``; a ``.jsonl`` file holds the same records). Records
hold at most ``MAX_COLUMNS`` fields, JSON nests at most ``MAX_DEPTH`` deep, and a table holds at
most ``MAX_CELLS`` cells. A record's object and array fields (a conversation's turns) are kept
packed, as their compact JSON text (``core.readers.rows.Packed``): at most
``LEAKAGE_LAB_MAX_NESTED_VALUES`` values are Python objects at once (one record, or one batch of
a columnar file's rows), and the packed text of a file is at most ``LEAKAGE_LAB_MAX_PACKED_BYTES``.

The text given back is the text the whole-file readers gave: universal newlines, a leading BOM
dropped, a ``.txt`` or ``.jsonl`` line split as ``str.splitlines`` splits it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import repeat
from math import nan as NAN
from pathlib import Path

import pandas as pd

from core.errors import DataError, UserError
from core.limits import Limit, human_bytes
from core.readers.rows import Packed, packed

MAX_ROWS = Limit("LEAKAGE_LAB_MAX_ROWS", 5_000_000)
MAX_ROW_BYTES = Limit("LEAKAGE_LAB_MAX_ROW_BYTES", 4 * 2**20)
MAX_JSON_BYTES = Limit("LEAKAGE_LAB_MAX_JSON_BYTES", 16 * 2**20)
MAX_COLUMNS = 1000               # fields of the records of one file (real tables: a handful)
MAX_CELLS = 50_000_000           # rows x columns of a table (400 MB of pointers; 5M rows of 10)
MAX_DEPTH = 64                   # JSON nesting (a record is 1, a list in a record 2)
MAX_NESTED_VALUES = Limit("LEAKAGE_LAB_MAX_NESTED_VALUES", 1_000_000)   # as objects at once
MAX_PACKED_BYTES = Limit("LEAKAGE_LAB_MAX_PACKED_BYTES", 2**30)   # packed JSON, all rows
CSV_CHUNK_ROWS = 2000           # smaller chunks peaked lower (2x a file's size; 10,000: 3.3x)
FRAME_ROWS = 50_000             # JSON records kept as Python values before they become a table


def empty(path: Path) -> DataError:
    return DataError(f"{path.name} holds no text (the file is empty)")


class Lines:
    """The lines of a file as text, each checked as it is read; ``text_seen`` tells whether any
    held more than white space."""

    def __init__(self, path: Path):
        self.path, self.text_seen = path, False

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """(line number, line) pairs; the line ends with ``\\n`` (``\\r\\n`` and ``\\r`` turned into
        it), except perhaps the last."""
        limit, name = MAX_ROW_BYTES.get(), self.path.name
        with open(self.path, "rb") as file:
            number = 0
            while raw := file.readline(limit + 2):
                number += 1
                if len(raw.rstrip(b"\r\n")) > limit:
                    raise DataError(f"{name}: line {number} is longer than {human_bytes(limit)}: "
                                    f"refused while reading it ({MAX_ROW_BYTES.hint()})")
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise DataError(f"{name} is not UTF-8 text (line {number}): save it as "
                                    "UTF-8") from None
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                if "\x00" in text:
                    raise DataError(f"{name} holds a NUL byte (line {number}): give a text file")
                if "\r" in text:
                    text = text.replace("\r\n", "\n").replace("\r", "\n")
                if not self.text_seen and text and not text.isspace():
                    self.text_seen = True
                yield number, text


class Rows:
    """The rows kept, checked as they come: their count and, for JSON values, their kind (all
    strings or all records), the records' fields and their nested values. A record is kept as a
    tuple of its values in column order (a dict per row took three times the row's text)."""

    def __init__(self, path: Path):
        self.path, self.limit, self.counted, self.packed_bytes = path, MAX_ROWS.get(), 0, 0
        self.texts: list[str] = []
        self.records: list[tuple] = []
        self.frames: list[pd.DataFrame] = []   # earlier records, as tables (``FRAME_ROWS``)
        self.columns: dict[str, None] = {}   # in order of first appearance, as pandas orders them
        self.packed_columns: set[str] = set()   # those that held a list or an object

    def count(self, rows: int = 1, columns: int = 0) -> None:
        """``rows`` more rows (of ``columns`` columns, or as many as the records so far)."""
        self.counted += rows
        if self.counted > self.limit:
            raise DataError(f"{self.path.name} holds more than {self.limit:,} rows: refused while "
                            f"reading it (split it, or {MAX_ROWS.hint()})")
        self.check_cells(columns or len(self.columns))

    def check_cells(self, columns: int) -> None:
        if self.counted * columns > MAX_CELLS:
            raise DataError(f"{self.path.name} holds more than {MAX_CELLS:,} cells "
                            f"({self.counted:,} rows of {columns:,} columns): give fewer rows "
                            "or columns")

    def add_text(self, text: str) -> None:
        self.count()
        self.texts.append(text)

    def add_value(self, value, where: str, *, maybe_nested: bool = True) -> None:
        """One JSON value of a ``.jsonl`` line or a ``.json`` list: a string or a record, of the
        same kind as the others, not nested too deep or too large (looked for only where
        ``maybe_nested``: the line has a ``[`` or a second ``{``)."""
        if isinstance(value, str) and not (self.records or self.frames):
            self.add_text(value)
        elif isinstance(value, dict) and not self.texts:
            self.count()
            if not self.columns.keys() >= value.keys():
                self.columns.update(dict.fromkeys(value))
                if len(self.columns) > MAX_COLUMNS:
                    raise too_many_columns(self.path)
            values = tuple(map(value.get, self.columns, repeat(NAN)))
            if maybe_nested and any(isinstance(v, (dict, list)) for v in values):
                self._add_nested(value, where)
                self.packed_columns.update(
                    k for k, v in value.items() if isinstance(v, (dict, list)))
                values = tuple(self.pack(v, where) for v in values)
            self.records.append(values)
            if len(self.records) == FRAME_ROWS:
                self.frames.append(self._table())
        else:
            raise DataError(f"{self.path.name} must hold strings or records (JSON objects), "
                            f"not a mix ({where})")

    def _add_nested(self, record: dict, where: str) -> None:
        depth, stack, values = 1, [(record, 1)], 0
        while stack:   # iterative: a deep value cannot exhaust the stack
            item, level = stack.pop()
            depth = max(depth, level)
            children = list(item.values() if isinstance(item, dict) else item)
            values += len(children)
            stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
        if depth > MAX_DEPTH:
            raise nested_too_deep(self.path, where)
        self.check_nested(values, where)

    def check_nested(self, values: int, where: str) -> None:
        """``values`` inside list and object fields, read as Python objects at once (a record,
        or a batch of rows), against ``MAX_NESTED_VALUES``."""
        limit = MAX_NESTED_VALUES.get()
        if values > limit:
            raise DataError(f"{self.path.name}: the list and object fields of {where} hold more "
                            f"than {limit:,} values: give shorter records or fewer of them "
                            f"({MAX_NESTED_VALUES.hint()})")

    def pack(self, value, where: str):
        """``value`` packed (``core.readers.rows.packed``), its text counted against
        ``MAX_PACKED_BYTES`` for the whole file."""
        value = packed(value)
        if isinstance(value, Packed):
            self.packed_bytes += len(value)
            limit = MAX_PACKED_BYTES.get()
            if self.packed_bytes > limit:
                raise DataError(f"{self.path.name}: its records' list and object fields hold more "
                                f"than {human_bytes(limit)} of JSON ({where}): give fewer rows (a "
                                f"sample of them) ({MAX_PACKED_BYTES.hint()})")
        return value

    def _table(self) -> pd.DataFrame:
        """The records kept so far as a table (its text columns in pandas' Arrow strings, no
        longer a Python object per row), emptied: a large file peaks at its table's size plus
        ``FRAME_ROWS`` records', not at all its records' (a 400 MB file of texts: 1.18x its
        size, was 2.96-3.44x; ``bench/bench_data_memory.py``)."""
        width, records = len(self.columns), self.records
        for index, row in enumerate(records):
            if len(row) < width:   # read before a later record named more columns
                records[index] = row + (NAN,) * (width - len(row))
        self.records = []
        columns = list(self.columns)
        packed_at = [i for i, name in enumerate(columns) if name in self.packed_columns]
        frame = pd.DataFrame.from_records(records, columns=columns,
                                          exclude=[columns[i] for i in packed_at])
        for i in packed_at:   # objects: pandas would make packed JSON plain text
            frame.insert(i, columns[i], pd.Series([r[i] for r in records], dtype=object))
        return frame

    def result(self) -> list[str] | pd.DataFrame:
        """The strings, or the records as the table ``DataFrame.from_records`` makes of dicts
        (a field a record lacks is NaN)."""
        if not (self.records or self.frames):
            return self.texts
        self.check_cells(len(self.columns))
        frames = self.frames + ([self._table()] if self.records else [])
        if len(frames) == 1:
            return frames[0]
        return pd.DataFrame({name: _joined([f[name] if name in f else pd.Series(NAN, f.index)
                                            for f in frames]) for name in self.columns},
                            columns=list(self.columns))


def _joined(parts: list[pd.Series]) -> pd.Series:
    """A column's parts one after the other, of the type one table of all their rows infers: a
    part with no value takes the others' type when it is text (pandas' ``str``) or a number
    (a float, with NaN)."""
    missing = [bool(part.isna().all()) for part in parts]
    given = [p.dtype for p, m in zip(parts, missing) if not m]
    if given and all(isinstance(d, pd.StringDtype) for d in given):
        kind = given[0]
    elif given and all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d)
                       for d in given):
        kind = "float64"
    else:
        return pd.concat(parts, ignore_index=True)
    return pd.concat([pd.Series(NAN, part.index, dtype=kind) if m else part
                      for part, m in zip(parts, missing)], ignore_index=True)


def too_many_columns(path: Path) -> DataError:
    return DataError(f"{path.name} has more than {MAX_COLUMNS:,} columns (fields): give a table "
                     "of a few columns")


def nested_too_deep(path: Path, where: str) -> DataError:
    return DataError(f"{path.name}: JSON nested more than {MAX_DEPTH} deep ({where}): give flat "
                     "records")


def read_txt(path: Path) -> list[str]:
    """The non-blank documents of a ``.txt`` file, one per line."""
    lines, rows = Lines(path), Rows(path)
    for _, line in lines:
        for part in line.splitlines():
            if part.strip():
                rows.add_text(part)
    if not lines.text_seen:
        raise empty(path)
    return rows.texts


def read_jsonl(path: Path) -> list[str] | pd.DataFrame:
    """The values of a ``.jsonl`` file, one per non-blank line: strings, or records as a table."""
    lines, rows = Lines(path), Rows(path)
    for number, line in lines:
        for part in line.splitlines():
            if part.strip():
                rows.add_value(_parse(path, part, f"line {number}"), f"line {number}",
                               maybe_nested="[" in part or part.count("{") > 1)
    if not lines.text_seen:
        raise empty(path)
    return rows.result()


def read_json(path: Path) -> list[str] | pd.DataFrame:
    """The list of a ``.json`` file (strings, or records as a table), parsed whole: so at most
    ``MAX_JSON_BYTES``."""
    limit, size = MAX_JSON_BYTES.get(), path.stat().st_size
    if size > limit:
        raise DataError(f"{path.name} is {human_bytes(size)}, more than the {human_bytes(limit)} a "
                        f".json file may hold: give a .jsonl file (one record per line) instead, "
                        f"or {MAX_JSON_BYTES.hint()}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        where = raw.count(b"\n", 0, err.start) + 1
        raise DataError(f"{path.name} is not UTF-8 text (line {where}): save it as UTF-8") from None
    del raw
    if "\x00" in text:
        where = text.count("\n", 0, text.index("\x00")) + 1
        raise DataError(f"{path.name} holds a NUL byte (line {where}): give a text file")
    if not text.strip():
        raise empty(path)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    value = _parse(path, text, "")
    if not isinstance(value, list):
        raise DataError(f"{path.name} must hold a list (of strings or records)")
    rows = Rows(path)
    for index, item in enumerate(value):
        rows.add_value(item, f"item {index + 1}")
    del value
    return rows.result()


def _parse(path: Path, text: str, where: str):
    try:
        return json.loads(text)
    except RecursionError:
        raise nested_too_deep(path, where or "the list") from None
    except ValueError as err:   # JSONDecodeError, or an integer of too many digits
        if where and isinstance(err, json.JSONDecodeError):
            err = f"{where}: {err.msg}, column {err.colno}"
        elif where:
            err = f"{where}: {err}"
        raise DataError(f"{path.name} is not a valid {path.suffix.lower()} file ({err})") from None


class _Feed:
    """Checked lines as the file object pandas reads, ``size`` characters at a time."""

    def __init__(self, lines: Iterator[tuple[int, str]]):
        self.lines, self.rest = lines, ""

    def read(self, size: int = -1) -> str:
        parts, total = [self.rest], len(self.rest)
        while size < 0 or total < size:
            item = next(self.lines, None)
            if item is None:
                break
            parts.append(item[1])
            total += len(item[1])
        text = "".join(parts)
        cut = len(text) if size < 0 else size
        self.rest = text[cut:]
        return text[:cut]


def read_csv(path: Path) -> pd.DataFrame:
    """The records of a ``.csv`` file (a header row first), every cell a string."""
    lines, rows = Lines(path), Rows(path)
    chunks = []
    try:
        reader = pd.read_csv(_Feed(_header_checked(lines)), dtype=str, keep_default_na=False,
                             chunksize=CSV_CHUNK_ROWS)
        for chunk in reader:
            rows.count(len(chunk), len(chunk.columns))
            chunks.append(chunk)
    except UserError:
        raise
    except (pd.errors.ParserError, ValueError) as err:
        if not lines.text_seen:
            raise empty(path) from None
        raise DataError(f"{path.name} is not a valid .csv file ({err})") from None
    if not lines.text_seen or not chunks:
        raise empty(path)
    return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


def _header_checked(lines: Lines) -> Iterator[tuple[int, str]]:
    """``lines``, the first that holds text (the header) checked to name at most ``MAX_COLUMNS``
    columns before pandas makes one array per column."""
    header_seen = False
    for number, line in lines:
        if not header_seen and line.strip():
            header_seen = True
            if line.count(",") >= MAX_COLUMNS:
                raise too_many_columns(lines.path)
        yield number, line
