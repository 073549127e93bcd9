"""Renderer of an audit series: each leakage measure against the training step, the table of
every checkpoint (CSV), each checkpoint's verdicts, and the HTML report to download."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.audit.series import (SeriesResult, point_label, render_series_report, series_figure,
                               table_rows)
from ui.text import plain


def render(result: SeriesResult, *, key: str) -> None:
    if result.stopped_early:
        st.warning("Stopped early: the figure and the report cover the checkpoints audited.")
    for note in result.notes:
        st.info(plain(f"Note: {note}."))
    if not result.steps_known:
        st.info("A checkpoint's name and folder tell no training step, so the checkpoints are "
                "numbered by their place in the list.")
    drawn = series_figure(result)
    if drawn is not None:
        st.plotly_chart(drawn, key=f"{key}figure")
    table = pd.DataFrame(table_rows(result))
    with st.container(key=f"{key}table"):
        st.dataframe(table, hide_index=True)
    left, right = st.columns(2)
    left.download_button("Download the report (HTML)", lambda: render_series_report(result),
                         file_name="leakage-lab-audit-series.html", mime="text/html",
                         type="primary", on_click="ignore",   # built on the click (~5 MB)
                         key=f"{key}report", help="one self-contained file: the figure, the "
                         "table, every verdict and how to rerun it")
    right.download_button("Download the table (CSV)", table.to_csv(index=False),
                          file_name="leakage-lab-audit-series.csv", mime="text/csv",
                          key=f"{key}table-csv")
    st.caption(f"{result.seconds:.0f} s in all · each checkpoint's audit is a run of its own on "
               "the Runs page, with its full report.")
    for point in result.points:
        run = f" · audit run #{point.audit_run_id}" if point.audit_run_id is not None else ""
        with st.expander(plain(f"{point_label(result, point)} ({point.status}){run}")):
            st.markdown("\n".join(f"- **{plain(attack)}**: {plain(verdict)}"
                                  for attack, verdict in point.verdicts.items())
                        or f"Not audited: {plain(point.error or point.status)}")
