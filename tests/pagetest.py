"""Run a page of the app headless with Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def page_app(relative_path: str, timeout: float = 60) -> AppTest:
    """An AppTest for ``app_pages/...`` or ``app.py`` given relative to the repository root."""
    return AppTest.from_file(str(ROOT / relative_path), default_timeout=timeout)
