"""Renderer of a realistic scenario's build (``realistic-build``, ``technical-build``,
``shift-build``): the base and its fine-tune, the domain's held-out loss before and after, what
was planted and how much the fine-tune learnt each plant (surprisal in bits)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.demo.realistic import RealisticSummary
from ui.text import plain


def render(result: RealisticSummary, *, key: str) -> None:
    cols = st.columns(4)
    cols[0].metric("Build time", f"{result.build_seconds:.1f} s")
    cols[1].metric("Training texts", f"{result.training_texts:,}")
    cols[2].metric("Steps", f"{result.steps:,}")
    cols[3].metric("Final training loss", f"{result.final_loss:.3f}")
    private = result.plays.get("private", [])
    text = result.text_source.get("text", "Shakespeare's plays")
    st.caption(plain(f"{result.base} fine-tuned on {len(private)} private parts of {text} "
                     f"({', '.join(private[:8])}{' ...' if len(private) > 8 else ''}), built "
                     f"under {result.root}"))
    if result.heldout_loss:
        (held, held_after), (public, public_after) = result.heldout_loss, result.public_loss
        st.caption(f"Held-out loss (nats/token, texts never trained on): the held-in users' "
                   f"other texts {held:.3f} → {held_after:.3f}; the public sample "
                   f"{public:.3f} → {public_after:.3f}.")
    rows = [{"plant": plant, "surprisal before (bits)": bits[0], "after (bits)": bits[1]}
            for plant, bits in result.surprisal_bits.items()]
    with st.container(key=f"{key}plants"):  # a table has no key of its own
        st.dataframe(pd.DataFrame(rows), hide_index=True)
