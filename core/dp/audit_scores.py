"""The DP auditor's file of scored canaries, read row by row and checked as it is read.

One canary per row of a ``.csv`` (a header row naming ``score`` and ``member``) or per line of a
``.jsonl`` (a record with both). The file is refused by its size before it is opened, and the
reading stops at the first bad row (named by its number) or past ``MAX_CANARIES``, so a huge
file or a huge row never grows the process: only the scores and labels are kept.

The size limit (default 64 MiB; 100,000 canaries take about 3 MB as CSV) is changed by an
operator with ``$LEAKAGE_LAB_MAX_SCORES_BYTES``, read each time a file is checked.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Iterator

import numpy as np

from core.readers.data import data_file, parse_bool
from core.errors import UserError

SUFFIXES = (".csv", ".jsonl", ".ndjson")
MIN_CANARIES = 10
MAX_CANARIES = 100_000     # the one-run search grows with them: ~2 s at 10,000, ~20 s at 100,000
MAX_BYTES_ENV, MAX_BYTES_DEFAULT = "LEAKAGE_LAB_MAX_SCORES_BYTES", 64 * 2**20
# A score is a log-probability, a loss or a ratio of them: a magnitude past 1e12 is a mistake
# of units or of parsing, and equal scores near 1e14 leave the histogram no room for its bins.
MAX_ABS_SCORE = 1e12


def max_bytes() -> int:
    """The size a scores file may have: ``$LEAKAGE_LAB_MAX_SCORES_BYTES`` (a positive whole
    number, ``8e9`` accepted) or 64 MiB."""
    text = os.environ.get(MAX_BYTES_ENV, "").strip().replace("_", "")
    if not text:
        return MAX_BYTES_DEFAULT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (math.isfinite(value) and value >= 1 and value.is_integer()):
        raise UserError(f"${MAX_BYTES_ENV} must be a positive whole number, not {text!r}")
    return int(value)


def check_canaries(scores: np.ndarray, members: np.ndarray) -> None:
    """A ``UserError`` unless the scores are finite, within ±``MAX_ABS_SCORE``, and there are
    enough canaries of each class."""
    if len(scores) != len(members):
        raise UserError(f"{len(scores)} scores but {len(members)} member labels")
    if not MIN_CANARIES <= len(scores) <= MAX_CANARIES:
        raise UserError(f"the audit needs from {MIN_CANARIES} to {MAX_CANARIES:,} canaries, "
                        f"got {len(scores):,}")
    if not np.all(np.isfinite(scores)):
        raise UserError("every score must be a finite number")
    if np.any(np.abs(scores) > MAX_ABS_SCORE):
        raise UserError(f"every score must be within ±{MAX_ABS_SCORE:g} (the attack's own units)")
    if members.all() or not members.any():
        raise UserError("the canaries are all " + ("members" if members.all() else "non-members")
                        + ": the audit needs both (each canary included by a fair coin)")


def _shown(value, limit: int = 40) -> str:
    """A cell as a message quotes it: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _score(value, where: str) -> float:
    try:
        number = math.nan if isinstance(value, bool) or value is None else float(value)
    except (TypeError, ValueError, OverflowError):   # OverflowError: a 400-digit JSON integer
        number = math.nan
    if not math.isfinite(number):
        raise UserError(f"{where}: score must be a finite number, not {_shown(value)}")
    if abs(number) > MAX_ABS_SCORE:
        raise UserError(f"{where}: score {number:g} is beyond ±{MAX_ABS_SCORE:g}: give scores "
                        "in the attack's own units (a log-probability, a loss or a ratio)")
    return number


def _member(value, where: str) -> bool:
    if isinstance(value, str) and len(value) > 40:   # no yes/no word: cut for the message
        value = value[:40] + "…"
    member = parse_bool(value, "member", where)
    if member is None:
        raise UserError(f"{where}: member is empty; every canary needs true (included in "
                        "training) or false")
    return member


def _csv_rows(lines, name: str) -> Iterator[tuple[str, object, object]]:
    """(where, score, member) of each row after the header of a CSV file."""
    reader = csv.reader(lines)
    header = next(reader, None) or []
    columns = {cell.strip(): i for i, cell in reversed(list(enumerate(header)))}
    missing = [c for c in ("score", "member") if c not in columns]
    if missing:
        raise UserError(f"{name} has no column {', '.join(missing)}: found "
                        f"{', '.join(filter(None, header)) or 'none'}")
    at = [columns["score"], columns["member"]]
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                score, member = (row[i] if i < len(row) else None for i in at)
                yield f"row {reader.line_num}", score, member
    except csv.Error as err:   # a stray quote at the end, a cell past csv's field size limit
        raise UserError(f"{name}: row {reader.line_num} is not valid CSV ({err})") from None


def _jsonl_rows(lines, name: str) -> Iterator[tuple[str, object, object]]:
    """(where, score, member) of each non-blank line of a JSON Lines file."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{name}: line {number} is not a JSON record ({err.msg})") from None
        except RecursionError:   # thousands of nested brackets
            raise UserError(f"{name}: line {number} is nested too deeply to read") from None
        if not isinstance(record, dict) or not {"score", "member"} <= record.keys():
            raise UserError(f"{name}: line {number} must be a record with score and member")
        yield f"line {number}", record["score"], record["member"]


def _opened(path: Path) -> Path:
    if path.suffix.lower() not in SUFFIXES:
        raise UserError(f"{path.name}: give the scores as a .csv (with a header) or a .jsonl "
                        "file, one canary per row")
    size, allowed = path.stat().st_size, max_bytes()
    if size > allowed:
        raise UserError(f"{path.name} is {_size(size)}, more than the {_size(allowed)} a scores "
                        f"file may be: refused before reading it (an operator may raise "
                        f"${MAX_BYTES_ENV})")
    return path


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


def write_canaries(path: Path, scores, members) -> Path:
    """A CSV of scored canaries as ``read_canaries`` reads it (``score,member`` rows), under
    its folder (made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("score,member\n" + "".join(f"{s:.6f},{str(bool(m)).lower()}\n"
                                               for s, m in zip(scores, members)),
                    encoding="utf-8")
    return path


def read_canaries(source: str) -> tuple[np.ndarray, np.ndarray]:
    """(scores, members) of a .csv or .jsonl file, read row by row and checked (``UserError``)."""
    path = _opened(data_file(source))
    rows = _csv_rows if path.suffix.lower() == ".csv" else _jsonl_rows
    scores, members = [], []
    try:
        with path.open(encoding="utf-8-sig", newline="") as lines:
            for where, score, member in rows(lines, path.name):
                if len(scores) == MAX_CANARIES:
                    raise UserError(f"{path.name} holds more than the {MAX_CANARIES:,} canaries "
                                    "an audit takes")
                scores.append(_score(score, where))
                members.append(_member(member, where))
    except UnicodeDecodeError:
        raise UserError(f"{path.name} is not UTF-8 text") from None
    scores, members = np.array(scores, dtype=float), np.array(members, dtype=bool)
    check_canaries(scores, members)
    return scores, members
