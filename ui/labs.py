"""Run a lab that takes seconds straight from its page, with a progress bar."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from core.errors import UserError


def run_lab(make_config: Callable[[], Any], run: Callable[..., Any], state_key: str) -> None:
    """Build the config (a bad value shows ``st.error`` and stops the page), run the lab with a
    progress bar, and keep its result in ``st.session_state[state_key]``."""
    try:
        config = make_config()
    except UserError as err:
        st.error(str(err))
        st.stop()
    bar = st.progress(0.0, "starting")
    st.session_state[state_key] = run(config, progress=lambda f, m="", partial=None: bar.progress(f, m))
    bar.empty()
