"""Renderer of a canary-users copy (Kandpal et al. 2023, Algorithm 1): the canary users and the
copy to download as JSONL or CSV."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from core.attacks.user_inference.canaries import CanariesResult
from core.attacks.user_inference.samples import load_samples, write_samples
from core.errors import UserError
from ui.text import plain


def _records(path: str) -> list[dict] | None:
    """The copy's records, or None (said so) when the file is gone or no longer reads."""
    try:
        samples = load_samples(path)
    except UserError as err:
        st.warning(plain(f"The copy can no longer be read: {err}"))
        return None
    return [{"user_id": s.user_id, "text": s.text}
            | ({} if s.member is None else {"member": s.member}) | {"canary": bool(s.canary)}
            for s in samples]


def render(result: CanariesResult, *, key: str) -> None:
    st.caption(plain(f"{len(result.canaries)} canary users; the copy ({result.samples} "
                     f"samples) is at {result.out}."))
    with st.container(key=f"{key}canaries"):  # a table has no key of its own
        st.dataframe(pd.DataFrame([dataclasses.asdict(c) for c in result.canaries]),
                     hide_index=True)
    records = _records(result.out)
    if records is None:
        return
    cols = st.columns(2)
    cols[0].download_button("Download the copy (JSONL)", write_samples(records, "jsonl"),
                            "canary_users.jsonl", "application/jsonl", key=f"{key}copy-jsonl")
    cols[1].download_button("Download the copy (CSV)", write_samples(records, "csv"),
                            "canary_users.csv", "text/csv", key=f"{key}copy-csv")
