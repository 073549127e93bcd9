"""The app shell: navigation runs and its default page (home) lists every section."""

from pagetest import page_app
from ui.nav import SECTIONS


def test_app_opens_on_home_listing_every_section():
    at = page_app("app.py").run()
    assert not at.exception
    assert at.title[0].value == "Leakage Lab"
    shown = [s.value for s in at.subheader]
    assert shown == [name for name, entries in SECTIONS.items() if entries]


def test_every_listed_page_file_exists():
    from pagetest import ROOT
    for entries in SECTIONS.values():
        for entry in entries:
            assert (ROOT / entry.path).is_file(), entry.path
