"""Columnar data files read with pyarrow: Parquet, and a folder HF ``datasets`` wrote with
``save_to_disk`` (its ``state.json`` names Arrow stream files).

Both are read batch by batch, each batch's rows counted against ``LEAKAGE_LAB_MAX_ROWS``, the
table's cells against ``MAX_CELLS`` and its nested values against
``LEAKAGE_LAB_MAX_NESTED_VALUES`` as they come, so a file too big is refused while it is read;
a text column stays in Arrow's strings (pandas' own ``str`` type: no Python object per row), a
list, struct or map column (a conversation's turns) is packed as JSON text, one string per row
(``core.readers.rows.Packed``), other columns become Python values. ``datasets`` itself is not
needed to read its folders: the files are plain Arrow IPC streams, which pyarrow reads without
the library's other dependencies (it unpickles nothing either way; ``state.json`` is JSON). A
``DatasetDict`` folder (``dataset_dict.json``) reads its ``train`` split, or its only one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from core.readers import stream
from core.errors import DataError

BATCH_ROWS = 2000
BUFFER_BYTES = 2**20   # a column chunk read through a buffer of this size, not whole
STATE, INFO, DICT = "state.json", "dataset_info.json", "dataset_dict.json"


def is_dataset_folder(path: Path) -> bool:
    """Whether ``path`` is a folder ``datasets``' ``save_to_disk`` wrote (a split or a dict)."""
    return path.is_dir() and ((path / STATE).is_file() or (path / DICT).is_file())


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path.parent.name}/{path.name} is not readable JSON: {err}") from None
    if not isinstance(value, dict):
        raise DataError(f"{path.parent.name}/{path.name} must hold a JSON object")
    return value


def split_folder(folder: Path) -> Path:
    """The split folder to read: ``folder`` itself, or a dataset dict's ``train`` (or only)
    split."""
    if (folder / STATE).is_file():
        return folder
    splits = _json(folder / DICT).get("splits")
    if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits) or not splits:
        raise DataError(f"{folder.name}/{DICT} names no splits")
    split = "train" if "train" in splits else splits[0] if len(splits) == 1 else None
    if split is None:
        raise DataError(f"{folder.name} holds the splits {', '.join(splits)} and none is called "
                        "train: give the folder of the split to read, e.g. "
                        f"{folder.name}/{splits[0]}")
    return _inside(folder, split)


def _inside(folder: Path, name: str) -> Path:
    """``folder/name``, refused if the name leaves the folder (``..``, an absolute path, a link)."""
    path = (folder / name).resolve()
    if path.parent != folder.resolve() or not path.exists():
        raise DataError(f"{folder.name}: {name!r} is not a file or folder inside it")
    return path


def arrow_files(folder: Path) -> list[Path]:
    """The Arrow stream files of a split folder, in the order its ``state.json`` gives."""
    folder = split_folder(folder)
    entries = _json(folder / STATE).get("_data_files")
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{folder.name}/{STATE} names no data files")
    names = [e.get("filename") if isinstance(e, dict) else None for e in entries]
    if not all(isinstance(n, str) and n.endswith(".arrow") for n in names):
        raise DataError(f"{folder.name}/{STATE}: every data file must be an .arrow file")
    return [_inside(folder, name) for name in names]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in arrow_files(folder))


def _batches(path: Path) -> Iterator:
    """The record batches of a Parquet file or of a dataset folder's Arrow files, read into
    memory from the system's allocator (a text column is kept as read: with pyarrow's default
    allocator, mimalloc, and its read-ahead, a 400 MB Parquet file of text peaked at 3.04x its
    size, here at 1.61x: ``bench/bench_data_memory.py``). A Parquet column chunk is read
    through a buffer of ``BUFFER_BYTES``, not whole: in row groups of a million rows (pyarrow's
    and pandas' default) conversations peaked at 3.55x its size, then 2.56x. A folder's files are
    read, not memory-mapped: a table kept in a mapping would fault if the file were rewritten
    under it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
    try:
        if path.is_dir():
            for file in arrow_files(path):
                with pa.OSFile(str(file)) as source:
                    yield from pa.ipc.open_stream(source)
        else:
            parquet = pq.ParquetFile(str(path), pre_buffer=False, buffer_size=BUFFER_BYTES)
            yield from parquet.iter_batches(batch_size=BATCH_ROWS, use_threads=False)
    except (pa.ArrowException, OSError) as err:
        raise DataError(f"{path.name} is not a readable {'Arrow' if path.is_dir() else 'Parquet'} "
                        f"dataset: {err}") from None


def _is_list(kind) -> bool:
    from pyarrow import types

    return types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind)


def _is_nested(kind) -> bool:
    from pyarrow import types

    return _is_list(kind) or types.is_struct(kind) or types.is_map(kind)


def nesting_depth(schema) -> int:
    """How deep a record of ``schema`` nests, counted as ``core.readers.stream`` counts JSON (a record
    is 1, a list in a record 2)."""
    from pyarrow import types

    def depth(kind) -> int:
        if types.is_map(kind):
            return 1 + depth(kind.item_type)
        if _is_list(kind):
            return 1 + depth(kind.value_type)
        if types.is_struct(kind):
            return 1 + max((depth(kind.field(i).type) for i in range(kind.num_fields)), default=0)
        return 0
    return 1 + max((depth(field.type) for field in schema), default=0)


def nested_values(batch) -> int:
    """The values inside a batch's list, map and struct columns, as ``stream.Rows`` counts a
    JSON record's (its fields, each list's items and each object's fields, all the way down):
    read from the Arrow offsets before any row becomes Python objects."""
    from pyarrow import types

    def inside(array) -> int:
        kind = array.type
        if types.is_map(kind) or _is_list(kind):
            items = array.items if types.is_map(kind) else array.flatten()
            return len(items) + inside(items)
        if types.is_struct(kind):
            return sum(len(field) + inside(field) for field in array.flatten())
        return 0
    nested = [inside(column) for column in batch.columns]
    return sum(nested) + batch.num_rows * batch.num_columns if any(nested) else 0


def _is_text(kind) -> bool:
    from pyarrow import types

    return types.is_string(kind) or types.is_large_string(kind)


def _values(parts: list, nested: bool) -> pd.Series | list:
    """One column from its batches: text as pandas' Arrow-backed strings (no Python object
    per row), packed JSON as objects (pandas would read it as plain text), anything else as
    the Python values of its rows."""
    import pyarrow as pa

    if parts and isinstance(parts[0], (pa.Array, pa.ChunkedArray)):
        return pa.chunked_array(parts).to_pandas()
    values = [value for part in parts for value in part]
    return pd.Series(values, dtype=object) if nested else values


def _python(column, rows: stream.Rows, where: str) -> list:
    """A batch's non-text column as Python values, a nested one packed (``rows.pack``)."""
    values = column.to_pylist()
    return [rows.pack(v, where) for v in values] if _is_nested(column.type) else values


def read_table(path: Path) -> pd.DataFrame:
    """The records of a Parquet file or a ``save_to_disk`` folder as a table of Python values
    (a list of turns packed as JSON text; text columns stay Arrow strings, as pandas keeps
    them), bounded as they are read."""
    rows = stream.Rows(path)
    parts: dict[str, list] = {}
    for batch in _batches(path):
        if not parts:
            if batch.num_columns > stream.MAX_COLUMNS:
                raise stream.too_many_columns(path)
            parts = {name: [] for name in batch.schema.names}
            nested = {f.name for f in batch.schema if _is_nested(f.type)}
        rows.count(batch.num_rows, len(parts))
        first_row = rows.counted - batch.num_rows + 1
        if first_row == 1 and nesting_depth(batch.schema) > stream.MAX_DEPTH:
            raise stream.nested_too_deep(path, "its schema")
        where = f"rows {first_row:,} to {rows.counted:,}"
        rows.check_nested(nested_values(batch), where)
        for name, column in zip(parts, batch.columns):
            parts[name].append(column if _is_text(column.type) else _python(column, rows, where))
    if not rows.counted:
        raise stream.empty(path)
    return pd.DataFrame({name: _values(chunks, name in nested) for name, chunks in parts.items()},
                        columns=list(parts))
