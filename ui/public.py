"""A discovery result's table with its public marks (``core.calibration.public``): a "public
sample" column, and the public rows under their own heading below the private ones."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.calibration.public import PublicMark, public_column


def public_tables(frame: pd.DataFrame, marks: list[PublicMark | None], *,
                  what: str = "rows") -> None:
    """``frame`` (one row per mark); marked rows get their label, and when the run listed the
    public ones below the private ones (``public_rows="below"``) they are shown apart."""
    labels = public_column(marks)
    if labels is None:
        st.dataframe(frame, hide_index=True)
        return
    frame = frame.assign(**{"public sample": labels})
    public = [mark is not None and mark.public for mark in marks]
    if not any(public) or public != sorted(public):   # none, or mixed in ("mixed")
        st.dataframe(frame, hide_index=True)
        return
    st.dataframe(frame[[not p for p in public]], hide_index=True)
    st.markdown(f"**Also in the public sample: {sum(public)} {what}**")
    st.caption("The public in-domain text holds these (verbatim, or half their 5-grams, case and "
               "spacing aside): the model may have learnt them from the domain, not from "
               "private training data.")
    st.dataframe(frame[public], hide_index=True)
