"""The renderer: the copies, and the canary's loss beside its shuffle's."""

from __future__ import annotations

import streamlit as st


def render(result, *, key: str) -> None:
    cols = st.columns(3)
    cols[0].metric("Copies in the training data", f"{result.count:,}")
    if result.canary_loss is not None:
        cols[1].metric("Loss of the canary", f"{result.canary_loss:.3f}")
        cols[2].metric("Loss of its shuffle", f"{result.shuffled_loss:.3f}",
                       f"{result.canary_loss - result.shuffled_loss:+.3f}", delta_color="inverse")
