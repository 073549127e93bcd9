"""The one reader of text and record files: documents, corpora, user samples.

Formats, by extension (anything else is refused, so a data field never reads an arbitrary
server file), read as a stream and bounded as they are read (``core.readers.stream``: rows, bytes
per line, UTF-8, NUL bytes, JSON nesting):

* ``.txt``: one document per non-blank line;
* ``.json``: a list of strings, or a list of records;
* ``.jsonl`` / ``.ndjson``: one record (JSON object) per line;
* ``.csv``: a header row, then one record per row (a spreadsheet's BOM is dropped);
* ``.parquet``, or a folder HF ``datasets`` wrote with ``save_to_disk``: one record per row,
  read batch by batch with pyarrow (``core.readers.arrow``).

Records may hold a fine-tuner's conversations (TRL's ``messages``, prompt-completion and
preference rows): ``core.chat`` renders them with the model's chat template.

A source may also be a named data source a plug-in registered (``core.sources``). Work
started from the app reads only the lab's own folders (``core.paths.confined``). Every problem
is a ``DataError`` that says what to fix.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core import paths, sources
from core.readers import arrow, rows, stream
from core.errors import DataError
from core.readers.rows import cell

SUFFIXES = (".txt", ".json", ".jsonl", ".ndjson", ".csv", ".parquet")
MAX_BYTES = 512 * 2**20
# the words a record's yes/no cell may hold (``parse_bool``)
TRUE = {"true", "1", "yes", "y", "t", "in", "member"}
FALSE = {"false", "0", "no", "n", "f", "out", "non-member", "nonmember"}
FORMATS_HELP = ("a .txt (one document per line), .json (a list of strings or records), "
                ".jsonl (one record per line), .csv (with a header) or .parquet file, or a "
                "folder written by datasets' save_to_disk")


def data_file(source: str) -> Path:
    """The file ``source`` names (a named data source or a path), checked to be readable data."""
    source = source.strip()
    if not source:
        raise DataError(f"no file given: give {FORMATS_HELP}")
    path = sources.data_path(source) or Path(source).expanduser()
    paths.check_readable(path)
    if arrow.is_dataset_folder(path):
        if arrow.folder_bytes(path) > MAX_BYTES:
            raise DataError(f"{path.name} holds over {MAX_BYTES // 2**20} MB: give a smaller "
                            "dataset")
        return path
    if path.suffix.lower() not in SUFFIXES:
        raise DataError(f"{path.name}: give {FORMATS_HELP}")
    if path.exists() and not path.is_file():  # a folder, a FIFO, a device
        raise DataError(f"{path.name} is not a regular file")
    if not path.is_file():
        known = ", ".join(sources.data_names())
        raise DataError(f"no such file: {paths.shown(source)} (give {FORMATS_HELP}"
                        + (f"; named sources: {known})" if known else ")"))
    if path.stat().st_size > MAX_BYTES:
        raise DataError(f"{path.name} is over {MAX_BYTES // 2**20} MB: give a smaller file")
    return path


def _frame(path: Path) -> pd.DataFrame | list[str]:
    """A table of records, or a list of strings for plain documents (read as a stream, bounded
    as it is read: ``core.readers.stream``)."""
    suffix = path.suffix.lower()
    if path.is_dir() or suffix == ".parquet":
        return arrow.read_table(path)
    if suffix == ".txt":
        return stream.read_txt(path)
    if suffix == ".csv":
        return stream.read_csv(path)
    return stream.read_json(path) if suffix == ".json" else stream.read_jsonl(path)


def read_table(source: str) -> pd.DataFrame | list[str]:
    """The records of a data file as a table, or its plain documents as strings."""
    return _frame(data_file(source))


def read_records(source: str, *, required: tuple[str, ...] = ("text",)) -> pd.DataFrame:
    """The records of a .csv, .json or .jsonl file as a table holding at least ``required``."""
    path = data_file(source)
    table = _frame(path)
    if isinstance(table, list):
        raise DataError(f"{path.name} holds plain texts, but records with the columns "
                        f"{', '.join(required)} are needed (a .csv or .jsonl file)")
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise DataError(f"{path.name} has no column {', '.join(missing)}: found "
                        f"{', '.join(map(str, table.columns)) or 'none'}")
    if table.empty:
        raise DataError(f"{path.name} holds no records")
    return table


def read_texts(source: str) -> list[str]:
    """The non-blank documents of a file: its lines, strings, or records' ``text`` field; of
    a fine-tuner's rows, what training learnt from (``core.readers.rows.trained_contents``)."""
    path = data_file(source)
    table = _frame(path)
    if isinstance(table, pd.DataFrame):
        table = _record_texts(table, path)
    if not all(isinstance(t, str) for t in table):
        raise DataError(f"{path.name}: every \"text\" must be a string")
    texts = [t for t in table if t.strip()]
    if not texts:
        raise DataError(f"{path.name} holds no text: put one document per line")
    return texts


def _record_texts(table: pd.DataFrame, path: Path) -> list:
    """The texts of a table: its ``text`` column, or the trained contents of TRL's rows."""
    if "text" in table.columns:
        return table["text"].tolist()
    kind = rows.table_kind(table.columns, path.name)
    return rows.trained_contents(table.to_dict("records"), kind)


def check_data(source: str) -> None:
    """A ``DataError`` unless ``source`` reads as data holding a document or a record (what a
    page checks of a file once it is chosen, before Run)."""
    path = data_file(source)
    table = _frame(path)
    if isinstance(table, pd.DataFrame) and table.empty:
        raise DataError(f"{path.name} holds no records")
    if isinstance(table, list) and not any(text.strip() for text in table):
        raise DataError(f"{path.name} holds no text: put one document per line")


def parse_bool(value, what: str, where: str) -> bool | None:
    value = cell(value)
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("", "nan", "none", "null"):
        return None
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise DataError(f"{where}: {what} must be true or false (or empty when unknown), not {value!r}")
