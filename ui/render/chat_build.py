"""Renderer of the chat scenario's build (``chat-build``): its rows, its users and its data
subjects, with how much the fine-tune learnt each subject's reply (bits before and after)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.demo.chat_scenario import ChatSummary
from ui.text import plain


def render(result: ChatSummary, *, key: str) -> None:
    cols = st.columns(4)
    cols[0].metric("Build time", f"{result.build_seconds:.1f} s")
    cols[1].metric("Training rows", f"{result.training_rows:,}")
    cols[2].metric("Steps", f"{result.steps:,}")
    cols[3].metric("Final training loss", f"{result.final_loss:.3f}")
    st.caption(plain(
        f"{result.base} fine-tuned on {result.persona_rows:,} persona conversations of "
        f"{', '.join(result.plays)} ({result.characters.get('held in', 0)} characters held in, "
        f"{result.characters.get('held out', 0)} held out) and {result.support_rows:,} support "
        f"conversations; the loss on the assistant's tokens only ({result.masked_share:.0%} of "
        f"the rendered tokens)."))
    rows = [{"subject": s["name"], "conversations": s["dose"], "email": s["email"],
             "phone": s["phone"], "card": s["card"],
             "reply before (bits)": result.reply_bits.get(s["name"], [None, None])[0],
             "after (bits)": result.reply_bits.get(s["name"], [None, None])[1]}
            for s in result.subjects]
    with st.container(key=f"{key}subjects"):  # a table has no key of its own
        st.dataframe(pd.DataFrame(rows), hide_index=True)
