"""A data-file picker for pages: a named data source or a path typed in, or an uploaded file::

    source = document_source("Training corpus", values.get("corpus", ""), key="ex-corpus")
    # "" (none), a named source, or the path of the file (uploads are saved privately)

The formats are those of ``core.data`` (.txt, .json, .jsonl, .csv), which reads the file when
the job runs.
"""

from __future__ import annotations

import streamlit as st

from core import sources
from core.data import FORMATS_HELP, SUFFIXES
from core.models import save_upload


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
        return str(save_upload(upload.name, upload.getvalue()))
    return typed.strip()
