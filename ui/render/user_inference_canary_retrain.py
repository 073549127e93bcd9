"""Renderer of the canary-users what-if: the chosen users, then the same users (and every group)
attacked as real users on demo:updated and as canary users on the retrained model."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from core.demo.whatif import CanaryRetrainResult
from ui.render.user_inference_mitigate import comparison


def render(result: CanaryRetrainResult, *, key: str) -> None:
    if result.stopped_early:
        st.warning("Stopped early: the attacks cover only the users scored before the cancel.")
    canaries = pd.DataFrame([dataclasses.asdict(c) for c in result.canaries])
    held_in = {row.user_id: row.member for row in result.attacked.rows}
    canaries.insert(1, "held-in", canaries["user_id"].map(held_in))
    with st.container(key=f"{key}canaries"):  # a table has no key of its own
        st.dataframe(canaries, hide_index=True)
    comparison(result, "with canary users", key)
