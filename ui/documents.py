"""A data-file picker for pages: a named data source or a path typed in, or an uploaded file::

    source = document_source("Training corpus", values.get("corpus", ""), key="ex-corpus")
    # "" (none), a named source, or the path of the file (uploads are saved privately)

The formats are those of ``core.data`` (.txt, .json, .jsonl, .csv), which reads the file when
the job runs.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from core import sources
from core.data import FORMATS_HELP, SUFFIXES
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
    if upload is not None:
        try:
            return str(save_upload(upload.name, upload))
        except UserError as err:  # no room on the disk
            st.error(plain(err))
    return typed.strip()


def file_fields(spec: AttackSpec, names: tuple[str, ...], values: dict, *, key: str) -> dict:
    """A ``document_source`` per config field in ``names``, labelled and explained by the field,
    starting at ``values``; returns the chosen sources as config values."""
    fields = {f.name: f for f in dataclasses.fields(spec.config_type)}
    return {name: document_source(field_label(fields[name], capital=True), values.get(name, ""),
                                  key=f"{key}-{name}", help=fields[name].metadata["help"])
            for name in names}
