"""TRL's dataset types without a model: which one a table is, a row's turns and completions,
and what training learnt from (``trained_contents``), as a corpus reader needs them.

Language modelling (``text``), conversational (``messages``: a list of ``{role, content}``
turns), prompt-completion (``prompt`` and ``completion``, strings or lists of turns) and
preference (``prompt``, ``chosen``, ``rejected``; without ``prompt``, the turns ``chosen`` and
``rejected`` share are the prompt). ``core.chat`` renders them with a chat template.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np

from core.errors import DataError, UserError

KINDS = ("text", "messages", "prompt-completion", "preference")
EXPECTED = ("a text column, messages (a list of {role, content} turns), prompt and completion, "
            "or prompt, chosen and rejected")


class Packed(str):
    """A record's list or object value kept as its compact JSON text, one string per cell: as
    Python objects, a conversation's turns took 4-8 times the file's size
    (``bench/bench_data_memory.py``). ``cell`` and ``as_turns`` give the value back."""

    __slots__ = ()


def packed(value):
    """A list or dict value as ``Packed`` JSON (a value JSON lacks, such as a date, as its
    text); any other value as it is."""
    if isinstance(value, (list, dict)):
        return Packed(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    return value


def unpacked(value):
    return json.loads(value) if isinstance(value, Packed) else value


def cell(value):
    """A record's value as a plain Python value; a missing one (None, NaN) is None."""
    value = unpacked(value)
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def dataset_kind(columns: Sequence[str]) -> str:
    """Which of TRL's dataset types a table with ``columns`` is (``KINDS``)."""
    names = set(columns)
    if {"chosen", "rejected"} <= names:
        return "preference"
    if {"prompt", "completion"} <= names:
        return "prompt-completion"
    if "messages" in names:
        return "messages"
    if "text" in names:
        return "text"
    raise DataError(f"found the columns {', '.join(map(str, columns)) or 'none'}: give {EXPECTED}")


def table_kind(columns: Sequence, name: str, labels: Sequence[str] = ()) -> str:
    """The dataset type of a table named ``name`` from its columns other than ``labels``."""
    columns = [str(c) for c in columns]
    try:
        return dataset_kind([c for c in columns if c not in labels])
    except UserError:
        raise DataError(f"{name} has no text column: found {', '.join(columns) or 'none'}; "
                        f"give {EXPECTED}") from None


def as_turns(value, column: str, row: int) -> list[dict]:
    """A list of ``{role, content}`` turns, as plain dicts, or a DataError naming the row."""
    value = unpacked(value)
    value = list(value) if isinstance(value, (list, tuple, np.ndarray)) else value
    if not isinstance(value, list) or not value or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str)
            and isinstance(t.get("content"), str) for t in value):
        raise DataError(f"row {row + 1}: {column} must be a non-empty list of "
                        "{role, content} turns (strings)")
    return [dict(t) for t in value]


def _implicit_prompt(chosen: list[dict], rejected: list[dict]) -> int:
    """How many leading turns ``chosen`` and ``rejected`` share (TRL's implicit prompt)."""
    shared = 0
    while shared < min(len(chosen), len(rejected)) - 1 and chosen[shared] == rejected[shared]:
        shared += 1
    return shared


def pieces(record: dict, kind: str, row: int) -> list[tuple[str, object, object]]:
    """(part, prompt, completion) of a prompt-completion or preference row."""
    if kind == "prompt-completion":
        parts = [("", record["prompt"], record["completion"])]
    else:
        parts = [(p, record.get("prompt"), record[p]) for p in ("chosen", "rejected")]
    out = []
    for part, prompt, completion in parts:
        prompt, completion = unpacked(prompt), unpacked(completion)
        if isinstance(completion, str) and isinstance(prompt, str):
            out.append((part, prompt, completion))
            continue
        completion = as_turns(completion, part or "completion", row)
        prompt = None if cell(prompt) is None else as_turns(prompt, "prompt", row)
        out.append((part, prompt, completion))
    if kind == "preference" and out[0][1] is None:   # prompt inside chosen and rejected
        shared = _implicit_prompt(out[0][2], out[1][2])
        out = [(part, c[:shared], c[shared:]) for part, _, c in out]
    return out


def _joined(value) -> str:
    return value if isinstance(value, str) else "\n".join(t["content"] for t in value or ())


def plain_texts(records: list[dict], kind: str) -> list[tuple[int, str]]:
    """Each sequence's row and text without a template (its turns' contents, one per line):
    what a cost estimate or a preview counts before the model, and its template, load."""
    out = []
    for row, record in enumerate(records):
        if kind == "text":
            out.append((row, str(cell(record["text"]))))
        elif kind == "messages":
            out.append((row, _joined(as_turns(record["messages"], "messages", row))))
        else:
            out += [(row, _joined(prompt) + _joined(completion))
                    for _, prompt, completion in pieces(record, kind, row)]
    return out


def trained_contents(records: list[dict], kind: str) -> list[str]:
    """What training learnt from, without a template: each assistant turn of a conversation,
    each completion (both of a preference row), each text; what extraction verifies against
    and a corpus reader gives when a fine-tuner's rows stand in for documents."""
    out = []
    for row, record in enumerate(records):
        if kind == "text":
            out.append(str(cell(record["text"])))
        elif kind == "messages":
            out += [t["content"] for t in as_turns(record["messages"], "messages", row)
                    if t["role"] == "assistant"]
        else:
            out += [completion if isinstance(completion, str) else
                    "\n".join(t["content"] for t in completion if t["role"] == "assistant")
                    for _, _, completion in pieces(record, kind, row)]
    return out
