"""The domain calibration an attack used (``core.calibration.domain``), in its renderer."""

from __future__ import annotations

import streamlit as st

from core.calibration.config import DomainCalibration
from ui.text import plain


def calibration_caption(calibration: DomainCalibration) -> None:
    """A caption saying which domain reference the attack compared with (none: nothing)."""
    if calibration.method != "none":
        st.caption(plain(calibration.summary))
