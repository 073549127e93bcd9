"""The app's pages, by section: (file under pages/, title, icon, one-line description)."""

from __future__ import annotations

from typing import NamedTuple


class PageEntry(NamedTuple):
    path: str
    title: str
    icon: str
    blurb: str


SECTIONS: dict[str, list[PageEntry]] = {
    "Theory": [
    ],
    "Models and runs": [
        PageEntry("pages/runs.py", "Runs", ":material/history:",
                  "past runs: reopen, compare, download or delete them"),
    ],
    "Attack lab": [
    ],
    "DP lab": [
    ],
    "Other systems": [
    ],
}
