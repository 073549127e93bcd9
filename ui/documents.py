"""A data-file picker for pages: a named data source or a path typed in, or an uploaded file::

    source = document_source("Training corpus", values.get("corpus", ""), key="ex-corpus")
    # "" (none), a named source, or the path of the file (uploads are saved privately)

The formats are those of ``core.readers.data`` (.txt, .json, .jsonl, .csv, .parquet, or a typed path to
a folder datasets' save_to_disk wrote). ``data_error`` is the one
check of every data field a form holds (``ui.forms.config_form`` makes it): a file that is
missing, empty or does not read keeps Run disabled, with one line that names the field.
``labelled`` names the field in a spec's own reader's message too (``ui.cost``: a file of
other columns, found by the estimate).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import streamlit as st

from core import paths, sources
from core.chat import describe_source
from core.readers.data import FORMATS_HELP, SUFFIXES, check_data, data_file
from core.errors import UserError
from core.models import save_upload
from core.specs import AttackSpec, field_label
from ui.text import plain


def _help() -> str:
    named = sources.data_names()
    return f"{FORMATS_HELP}" + (f"; named sources: {', '.join(named)}" if named else "")


def document_source(label: str, default: str, key: str, help: str | None = None) -> str:
    """A path (or named data source) typed in, or an uploaded data file's path."""
    columns = st.columns([3, 2])
    typed = columns[0].text_input(label, value=default, key=f"{key}-path", help=help or _help())
    upload = columns[1].file_uploader(f"or upload ({label.lower()})",
                                      type=[s.lstrip(".") for s in SUFFIXES], key=f"{key}-upload")
    source = typed.strip()
    if upload is not None:
        try:
            source = str(save_upload(upload.name, upload))
        except UserError as err:  # no room on the disk
            st.error(plain(err))
    found = data_summary(source)
    if found:
        columns[0].caption(plain(found))
    return source


def file_fields(spec: AttackSpec, names: tuple[str, ...], values: dict, *, key: str) -> dict:
    """A ``document_source`` per config field in ``names``, labelled and explained by the field,
    starting at ``values``; returns the chosen sources as config values."""
    fields = {f.name: f for f in dataclasses.fields(spec.config_type)}
    return {name: document_source(field_label(fields[name], capital=True), values.get(name, ""),
                                  key=f"{key}-{name}", help=fields[name].metadata["help"])
            for name in names}


def data_problem(source: str) -> str | None:
    """What is wrong with the data file ``source`` (a path or a named source) for a run started
    from a page: outside the folders the app reads (``core.paths.check_readable``: said
    before the path is looked at), missing, empty or unreadable (``core.readers.data.
    check_data``, confined as the run is); None when it reads."""
    return _check(source)[0]


def data_summary(source: str) -> str | None:
    """What the data file ``source`` holds (``core.chat.describe_source``: its rows' type and
    the tokens scored), once it reads; None before."""
    return _check(source)[1] if source.strip() else None


def _check(source: str) -> tuple[str | None, str | None]:
    """``_read_check`` of the file ``source`` names, or its lookup's message (a path outside
    the lab's folders: the run's own refusal, before the path is looked at)."""
    with paths.confined():
        try:
            paths.check_readable(sources.data_path(source) or Path(source).expanduser())
            path = data_file(source)
        except UserError as err:
            return str(err), None
        except (ValueError, RuntimeError, OSError):   # ~nobody/x, a NUL byte: no file there
            return f"no such file: {source}", None
        stamp = path.stat()
    return _read_check(str(path), stamp.st_mtime_ns, stamp.st_size)


@st.cache_data(max_entries=64, show_spinner=False)
def _read_check(path: str, mtime_ns: int, size: int) -> tuple[str | None, str | None]:
    """``check_data``'s message for one version of a file (``mtime_ns`` and ``size`` key it),
    or what it holds, so that a large file is read once, not on every rerun."""
    with paths.confined():
        try:
            check_data(path)
        except UserError as err:
            return str(err), None
        try:
            return None, describe_source(path)
        except UserError:   # records of other columns (e.g. data subjects): nothing to say
            return None, None


def _data_fields(spec: AttackSpec, values: dict):
    """Each data field of ``spec`` given a file (a path or a named source) in ``values``, with
    its label: (label, source)."""
    for field in dataclasses.fields(spec.config_type):
        source = values.get(field.name)
        if field.metadata.get("path") == "data" and isinstance(source, str) and source.strip():
            yield field_label(field, capital=True), source.strip()


def data_error(spec: AttackSpec, values: dict) -> str | None:
    """The first data field of ``spec`` whose file in ``values`` is missing, empty or unreadable,
    as "Label: what is wrong"; None when each given one reads."""
    for label, source in _data_fields(spec, values):
        problem = data_problem(source)
        if problem:
            return f"{label}: {problem}"
    return None


def labelled(spec: AttackSpec, values: dict, message: str) -> str:
    """A reader's ``message`` about a file ("rows.jsonl has no column …") as "Label: message"
    when it opens with the file of one of ``spec``'s data fields in ``values``."""
    for label, source in _data_fields(spec, values):
        try:
            name = (sources.data_path(source) or Path(source)).name
        except (UserError, ValueError, OSError):   # a scenario not built yet, a bad path
            continue
        if name and message.startswith(name):
            return f"{label}: {message}"
    return message
