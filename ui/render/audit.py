"""Renderer of an audit: the verdict of each attack, the HTML report to download (rebuilt from
the stored runs), and each attack's own view, drawn by its renderer."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.audit.audit import AuditResult
from core.audit.report import render_report, stored_results
from ui.text import plain


def render(result: AuditResult, *, key: str) -> None:
    from ui.render import renderer

    if result.stopped_early:
        st.warning("Stopped early: the report covers the attacks that finished.")
    for note in result.notes:
        st.info(plain(f"Note: {note}."))
    st.markdown("\n".join(f"- **{plain(e.title)}** ({e.status}): {plain(e.verdict)}"
                           for e in result.entries))
    table = pd.DataFrame([{"attack": e.title, "status": e.status, "run": e.run_id,
                           "seconds": round(e.seconds, 1)} for e in result.entries])
    with st.container(key=f"{key}verdicts"):
        st.dataframe(table, hide_index=True)
    results = stored_results(result)
    st.download_button("Download the report (HTML)", lambda: render_report(result, results),
                       file_name="leakage-lab-audit.html", mime="text/html", type="primary",
                       on_click="ignore",   # built on the click, not on every rerun (~5 MB)
                       key=f"{key}report", help="one self-contained file: open it in any "
                       "browser, print it to PDF; every figure and the provenance inside")
    st.caption(f"{result.seconds:.0f} s in all · tool commit "
               f"{plain(result.provenance.commit or 'unknown')} · every attack is also a run of its "
               "own on the Runs page.")
    for entry in result.entries:
        if entry.attack not in results:
            continue
        with st.expander(f"{entry.title} · run #{entry.run_id}"):
            renderer(entry.attack)(results[entry.attack], key=f"{key}{entry.attack}-")
