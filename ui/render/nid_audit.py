"""Renderer of a natural-identifier audit: what was found, the notes on what the bound rests on,
the audit (drawn by the ``dp-audit`` renderer), the AUROC and TPR at low FPR, and every scored
string."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.dp.nid_audit import NidAuditResult
from ui.render import dp_audit
from ui.text import plain


def found_line(result: NidAuditResult) -> str:
    """What the corpus held and what was scored, in words."""
    c = result.config
    found = ", ".join(f"{count:,} {name}" for name, count in result.found.items() if count)
    reference = f" against {c.reference}" if c.reference.strip() else ""
    return (f"{c.model}{reference}: {result.texts:,} texts hold {result.occurrences:,} "
            f"identifier occurrences, {found} distinct. {result.members:,} of them audited as "
            f"members beside as many fresh strings of the same formats, each scored after up to "
            f"{c.context_tokens} tokens of its context.")


def metrics_table(result: NidAuditResult) -> pd.DataFrame:
    m = result.metrics
    return pd.DataFrame([{
        "AUROC": m.auroc, "TPR at 0.1% FPR": m.tpr_at_01pct_fpr, "TPR at 1% FPR": m.tpr_at_1pct_fpr,
        "TPR at 5% FPR": m.tpr_at_5pct_fpr, "members": m.n_in, "fresh strings": m.n_out,
        "duplicated members": result.duplicated, "most copies": result.max_copies,
        "seconds": result.seconds}])


def render(result: NidAuditResult, *, key: str) -> None:
    st.markdown(plain(found_line(result)))
    for note in result.notes:
        st.caption(plain(note))
    dp_audit.render(result.audit, key=f"{key}audit-")
    with st.container(key=f"{key}metrics"):
        st.dataframe(metrics_table(result), hide_index=True)
    with st.expander(f"The {len(result.identifiers):,} scored strings"):
        with st.container(key=f"{key}identifiers"):
            st.dataframe(pd.DataFrame([vars(row) for row in result.identifiers]),
                         hide_index=True)
