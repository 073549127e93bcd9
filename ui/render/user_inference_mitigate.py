"""Renderer of a user-inference mitigation what-if: AUROC with 95% CI per group of users,
demo:updated against the model retrained on the mitigated data (Kandpal et al. 2023, §5)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import plotly.express as px
import streamlit as st

from core.demo.whatif import BASELINE, WhatIfResult


def comparison(result: WhatIfResult, variant: str, key: str) -> None:
    """The AUROC bars (with their intervals) and the table of both attacks per group."""
    st.caption(f"Variant: {result.variant} · {result.user_samples_before} → "
               f"{result.user_samples_after} user training samples · {result.steps} steps.")
    long = pd.DataFrame(
        [{"group": r.group, "model": model, "AUROC": auroc,
          "plus": (ci or [0, auroc])[1] - auroc, "minus": auroc - (ci or [auroc])[0]}
         for r in result.rows
         for auroc, ci, model in ((r.baseline_auroc, r.baseline_auroc_ci, BASELINE),
                                  (r.variant_auroc, r.variant_auroc_ci, variant))])
    fig = px.bar(long, x="group", y="AUROC", color="model", barmode="group", error_y="plus",
                 error_y_minus="minus", range_y=[0, 1], title="Attack AUROC with 95% CI")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    st.plotly_chart(fig, key=f"{key}auroc-bars")
    with st.container(key=f"{key}comparison"):  # a table has no key of its own
        st.dataframe(pd.DataFrame([dataclasses.asdict(r) for r in result.rows]), hide_index=True)


def render(result: WhatIfResult, *, key: str) -> None:
    if result.stopped_early:
        st.warning("Stopped early: the attacks cover only the users scored before the cancel.")
    comparison(result, result.variant, key)
