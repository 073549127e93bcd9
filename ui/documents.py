"""A text-file picker for pages: a demo file or a path, or an uploaded file::

    source = document_source("Training corpus", "demo:private_train", key="corpus")
    # "" (none), "demo:private_train", or the path of the file (uploads are saved privately)
"""

from __future__ import annotations

import streamlit as st

from core.models import save_upload


def document_source(label: str, default: str, key: str, help: str | None = None) -> str:
    """A path (or ``demo:...`` name) typed in, or an uploaded .txt/.json/.jsonl file's path."""
    columns = st.columns([3, 2])
    typed = columns[0].text_input(label, value=default, key=f"{key}-path", help=help or (
        "a .txt (one document per line), .json (list of strings) or .jsonl (\"text\" field) "
        "file; demo:private_train, demo:public_train, demo:user_samples are the demo's data"))
    upload = columns[1].file_uploader(f"or upload ({label.lower()})", type=["txt", "json", "jsonl"],
                                      key=f"{key}-upload")
    if upload is not None:
        return str(save_upload(upload.name, upload.getvalue()))
    return typed.strip()
