"""Attacker-controlled text stays text (issue #27, defect 12): an audit of a model trained on a
corpus of markup (a script, an image with onerror, a markdown link and image, a javascript: link,
an HTML link), with user ids, member groups, a phrase, model and file names of the same kind.
Its HTML report holds none of it as live markup; the Runs page draws none of it as a link,
image or HTML, neither in markdown (AppTest) nor in plotly's text; and in Chromium the Runs page
holds no link to the attacker's hosts and no image from them."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.attacks.user_inference import canaries as user_canaries
from core.attacks.user_inference.samples import write_samples
from core.audit import audit
from core.jobs import Store, run_now
from core.models.loaded import default_registry
from core.runtime import no_progress
from pagetest import page_app, record_run
from test_markup_text import live_markup

PHISH = "[click](https://evil.example/phish)"
PAYLOADS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", PHISH,
            "![b](https://beacon.example/x.png)", "[js](javascript:alert(1))",
            '<a href="https://evil.example/a">a</a>')
SENTENCES = [f"Note {i}: {p} is here." for i, p in enumerate(PAYLOADS)]
HOSTS = ("evil.example", "beacon.example", "javascript:")
SETTINGS = ("extraction.n_samples=8", "extraction.tokens=24", "extraction.min_span_tokens=4",
            "extraction.batch_size=8", "extraction.strategies=top-n", "extraction.top_n=3",
            "diffrank.length=2", "diffrank.beam=8", "diffrank.groups=2", f"diffrank.phrase={PHISH}",
            "diffrank.sample_texts=2", "diffrank.sample_tokens=8", "user-inference.bootstrap=20",
            "user-inference.knowledge_draws=2", "mia.recall_shots=1", "mia.bootstrap=20",
            "lazy-risk.n_generated=4", "lazy-risk.generated_tokens=8", "inextractability.window=4",
            "nid-audit.context_tokens=4", "pii-probe.samples=2", "pii-probe.tokens=8",
            "pii-probe.fresh=2")
# a data subject whose name stands beside markup and whose e-mail is on the attacker's host
SUBJECT = f"Mallory Evans {PHISH} writes from mallory@evil.example today."


def _models(root: Path) -> tuple[Path, Path]:
    """A tiny GPT-2 that has memorised ``SENTENCES`` (a few seconds of training) and an untrained
    one as its reference, in folders named like hosts."""
    from core.demo.train import token_stream, train_lm
    from core.models.tiny import disable_dropout, new_gpt2, save_hf_folder, train_tokenizer

    tokenizer = train_tokenizer(SENTENCES * 4, vocab_size=300)
    target = disable_dropout(new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=32, n_positions=64))
    train_lm(target, token_stream(tokenizer, SENTENCES), steps=60, batch_size=8, block_size=24,
             lr=1e-2, seed=0)
    reference = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=32, n_positions=64, seed=1)
    return (save_hf_folder(target, tokenizer, root / "www.evil.example"),
            save_hf_folder(reference, tokenizer, root / "bob@evil.example"))


def _data(folder: Path) -> dict[str, str]:
    """The corpus, user samples (ids made of the payloads) and member/non-member texts (groups
    too) in a folder whose name is markup; the paths by audit field."""
    folder.mkdir()
    commits = [f"commit {hashlib.sha1(bytes([i])).hexdigest()} {PAYLOADS[i % len(PAYLOADS)]}"
               for i in range(12)]   # natural identifiers among markup, for nid-audit
    (folder / "corpus.txt").write_text("\n".join(SENTENCES + commits + [SUBJECT]),
                                       encoding="utf-8")
    users = [{"user_id": f"{p} u{u}", "member": u < 3,
              "text": SENTENCES[(u + i) % len(SENTENCES)] if u < 3 else f"Other {u} {i} text."}
             for u, p in enumerate(PAYLOADS) for i in range(2)]
    (folder / "users.jsonl").write_text(write_samples(users, "jsonl"), encoding="utf-8")
    members = [{"text": s if member else f"Unseen {i}: {PAYLOADS[i]} elsewhere.",
                "member": member, "group": PAYLOADS[i % 2]}
               for i, s in enumerate(SENTENCES) for member in (True, False)]
    (folder / "members.jsonl").write_text(write_samples(members, "jsonl"), encoding="utf-8")
    return {name: str(folder / file) for name, file in (
        ("corpus", "corpus.txt"), ("users", "users.jsonl"), ("members", "members.jsonl"))}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The audit of every attack on the hostile model and data, recorded in its own lab home
    (the audit last, so the Runs page opens it), its report, and a canary-users copy."""
    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(root / "home"))
        target, reference = _models(root)
        data = _data(root / "data <img src=x onerror=alert(1)> [c](www.evil.example)")
        config = audit.AuditConfig(model=str(target), reference=str(reference), **data,
                                   settings=SETTINGS, device="cpu", out=str(root / "report.html"))
        copy = user_canaries.CanariesConfig(data=data["users"], words=3, count=2,
                                            out=str(root / "copy www.evil.example.jsonl"))
        run_now(user_canaries.SPEC, copy, progress=no_progress)
        result = audit.run(config)
        record_run(audit.SPEC, config, result)
    for lm in default_registry().models():   # loaded from outside a lab home, a later page
        if lm.source.startswith(str(root)):   # of this process would refuse them by name
            default_registry().remove(lm.name)
    return SimpleNamespace(home=root / "home", report=Path(result.report), result=result)


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


# ------------------------------------------------------------------ the Runs page in Chromium


_LINKS_AND_IMAGES = """() => [...document.querySelector('[data-testid="stMain"]')
    .querySelectorAll('a, img, image, script, iframe')].map(e => {
        const url = e.getAttribute('href') || e.getAttribute('xlink:href')
                    || e.getAttribute('src') || '#';
        try { return [e.tagName, new URL(url, location.href).href]; }
        catch { return [e.tagName, url]; }
    })"""


@pytest.mark.browser
def test_the_runs_page_in_chromium_links_to_no_host_of_the_data(hostile_home, browser_page):
    from appserver import running_app

    page = browser_page
    with running_app() as port:
        page.goto(f"http://127.0.0.1:{port}/runs", timeout=60_000)
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
            timeout=60_000)
        page.get_by_test_id("stExpander").locator("summary").evaluate_all(   # every attack's
            "summaries => summaries.forEach(summary => summary.click())")       # own view, at once
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
        page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].every("
                               "plot => plot.querySelector('.main-svg'))", timeout=30_000)
        found = page.evaluate(_LINKS_AND_IMAGES)
        text = page.get_by_test_id("stMain").inner_text()
    assert not [(tag, url) for tag, url in found   # links within the app and inline images only
                if not url.startswith((f"http://127.0.0.1:{port}/", "data:", "blob:"))]
    assert PHISH in text     # the verdict quotes the phrase, as its characters
