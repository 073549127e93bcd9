"""Attacker-controlled text stays text (issue #27, defect 12): an audit of a model trained on a
corpus of markup (a script, an image with onerror, a markdown link and image, a javascript: link,
an HTML link), with user ids, member groups, a phrase, model and file names of the same kind.
Its HTML report holds none of it as live markup; the Runs page draws none of it as a link,
image or HTML, neither in markdown (AppTest) nor in plotly's text. (In Chromium the Runs page
holds no link to the attacker's hosts and no image from them: tests/browser/test_browser_pages.py;
the model and data: tests/support/hostile_audit.py.)"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from core.jobs import Store
from hostile_audit import HOSTS, PHISH, record_hostile_audit
from pagetest import page_app
from test_markup_text import live_markup


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    return record_hostile_audit(root, root / "home")


@pytest.fixture
def hostile_home(hostile, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(hostile.home))
    return hostile


# ------------------------------------------------------------------ the HTML report


class _Elements(HTMLParser):
    """Every start tag with its attributes, the text of each script, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags, self.scripts, self.text, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1] += data
        else:
            self.text.append(data)


def test_the_report_holds_the_data_as_text_never_as_markup(hostile):
    page = _Elements()
    page.feed(hostile.report.read_text(encoding="utf-8"))
    assert not [t for t, _ in page.tags if t in ("img", "a", "iframe", "object", "embed")]
    assert not [(t, a) for t, a in page.tags if any(
        name.startswith("on") or any(h in (value or "") for h in HOSTS)
        for name, value in a.items())]
    plotly_js, *figures = page.scripts          # plotly.js once, then one call per figure
    assert "plotly" in plotly_js[:2000].lower() and len(figures) == len(
        [a for t, a in page.tags if t == "div" and a.get("class") == "plotly-graph-div"])
    assert all(f.lstrip().startswith("window.PLOTLYENV") for f in figures)
    verdicts = {e.attack: e.verdict for e in hostile.result.entries}
    assert all(e.status == "done" for e in hostile.result.entries), verdicts
    assert {"inextractability", "nid-audit", "pii-probe"} <= set(verdicts)   # every attack, on hostile data
    assert PHISH in verdicts["diffrank"] and "Note" in verdicts["lazy-risk"]  # markup quoted
    text = "".join(page.text)
    assert PHISH in text and "<img src=x onerror=alert(1)>" in text   # shown, as characters


# ------------------------------------------------------------------ the Runs page (AppTest)


_TAGS = re.compile(r"<\s*(a|img|script)\b", re.IGNORECASE)   # what plotly draws of HTML


def markdown_bodies(at) -> list[str]:
    """Every string the page hands Streamlit's markdown: texts, captions, alerts, headings, and
    the labels of expanders, tabs and metrics."""
    bodies = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success",
                                   "title", "header", "subheader") for e in getattr(at, kind)]
    return bodies + [e.label for blocks in (at.expander, at.tabs, at.metric) for e in blocks]


def chart_strings(at) -> list[str]:
    """Every string in the plotly figures the page draws (titles, labels, hover texts)."""
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, dict)):
            for item in value.values() if isinstance(value, dict) else value:
                yield from strings(item)
    return [s for chart in at.get("plotly_chart") for s in strings(json.loads(chart.proto.spec))]


def test_every_renderer_on_the_runs_page_draws_the_data_as_text(hostile_home):
    runs = Store().runs()
    at = page_app("app_pages/runs.py").run()
    shown = set()
    for run in runs:
        at.selectbox(key="run").set_value(run.id).run()
        assert not at.exception, run.kind
        bodies = markdown_bodies(at)
        assert not [(run.kind, m) for b in bodies for m in live_markup(b)]
        assert not [(run.kind, s) for s in chart_strings(at) if _TAGS.search(s)]
        shown |= {run.kind for b in bodies if "evil.example" in b}
    assert shown >= {"audit", "extraction", "diffrank", "lazy-risk", "user-inference-canaries"}
