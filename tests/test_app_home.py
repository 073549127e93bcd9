"""The app shell: navigation and the home page run headless without an exception."""

from pagetest import page_app
from ui.nav import SECTIONS


def test_home_page_runs_and_lists_every_section():
    at = page_app("pages/home.py").run()
    assert not at.exception
    assert at.title[0].value == "Leakage Lab"
    shown = [s.value for s in at.subheader]
    assert shown == [name for name, entries in SECTIONS.items() if entries]


def test_app_navigation_runs():
    at = page_app("app.py").run()
    assert not at.exception
