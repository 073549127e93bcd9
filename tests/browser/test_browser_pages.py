"""A real browser walks every page of the app (issue #13): on a fresh start (no demo built) the
pages that read the lab home, then with the tiny demo installed and an extraction run recorded
every page, and no request leaves the server (no icon or font from a CDN); then moves the Bound
Explorer's σ slider, types bad whole numbers, audits uploads as a researcher does (issue #32),
and draws the Runs page of an audit made of attacker-controlled markup (issue #27). One app
server for the module, its lab home the module's: the tests run in this order (the Audit page
shows the last audit, the Runs page opens the last run).

A page passes when its script finished with no exception, no red error box and no traceback;
on a fresh start the demo pages show the build banner (an info box) instead. With a recorded
extraction run, the extraction page draws its per-token heat map with a readable plot area.

Set WALK_SCREENSHOTS to a folder to keep a screenshot of every page visited.
"""

import dataclasses
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from appserver import running_app
from browser_audit import DONE, PLACEHOLDER, audit_and_download, read_offline, upload_model
from core import sources
from core.attacks.extraction import spec as extraction
from core.demo import scenario
from core.jobs import run_now
from core.runtime import no_progress
from demo_fixtures import install_demo
from hostile_audit import PHISH, record_hostile_audit
from reports import rerun_command, rerun_words, zipped
from ui.models import DEMO_BANNER
from ui.nav import SECTIONS

pytestmark = pytest.mark.browser

ERROR_BOX = '[data-testid="stAlertContentError"]'
BANNER_START = DEMO_BANNER.split("**")[0]      # the banner's text before its bold words
MIN_HEAT_PLOT_PX = 150
SCREENSHOTS = os.environ.get("WALK_SCREENSHOTS")
SELF_CONTAINED = ("Theory", "Other systems")   # sections that read nothing of the lab home


def page_paths(skip: tuple[str, ...] = ()) -> list[str]:
    """The URL path of every page but those of the sections ``skip``: app.py's Home at the
    root, then each of ``ui.nav.SECTIONS`` (the list app.py builds ``st.navigation`` from) at
    its file's stem, as Streamlit names it."""
    return [""] + [Path(e.path).stem for section, entries in SECTIONS.items()
                   if section not in skip for e in entries]


def open_page(page: Page, url: str) -> None:
    """Load ``url``; wait until its script run has finished and every element is drawn (an
    element whose code is still loading, an error box included, is a skeleton until then)."""
    page.goto(url, timeout=60_000)
    page.locator(DONE).wait_for(timeout=60_000)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=30_000)


def screenshot(page: Page, file: Path) -> None:
    """The whole page: the window made as tall as the main area's content for the shot."""
    size = page.viewport_size
    tall = page.get_by_test_id("stMain").evaluate("main => main.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], tall)})
    file.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(file))
    page.set_viewport_size(size)


def walk(page: Page, port: int, shots: str,
         paths: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Open each page of ``paths`` by its URL; returns each page's text and, for a page that is
    not clean, what is wrong: an exception, a red error box, a traceback."""
    texts, problems = {}, {}
    for path in paths:
        open_page(page, f"http://127.0.0.1:{port}/{path}")
        if SCREENSHOTS:
            screenshot(page, Path(SCREENSHOTS) / f"{shots}-{path or 'home'}.png")
        text = texts[path] = page.get_by_test_id("stMain").inner_text()
        found = [f"exception: {e}" for e in page.get_by_test_id("stException").all_inner_texts()]
        found += [f"error: {e}" for e in page.locator(ERROR_BOX).all_inner_texts()]
        found += ["traceback"] if "Traceback (most recent call last)" in text else []
        if found:
            problems[path or "home"] = found
    return texts, problems


def sidebar_paths(page: Page) -> list[str]:
    """The URL path of every link in the sidebar's navigation ("" for Home)."""
    links = page.get_by_test_id("stSidebarNav").locator("a")
    expect(links.first).to_be_visible()
    base = page.url.split("/", 3)[:3]
    return [link.get_attribute("href").removeprefix("/".join(base)).strip("/")
            for link in links.all()]


def record_an_extraction() -> None:
    """A short extraction on the demo's models, recorded in the store as a page's run would be."""
    demo = sources.preset(extraction.SPEC.name, "demo")
    run_now(extraction.SPEC, extraction.ExtractionConfig(**demo | dict(
        strategies=("top-n",), n_samples=8, tokens=12, top_k=5)), progress=no_progress)


@pytest.fixture(scope="module")
def app(tmp_path_factory, session_cache):
    """The app served for the module from a lab home of its own, empty at first, and the
    session's cache (as ``lab_home`` sets them): (port, home)."""
    home = tmp_path_factory.mktemp("app") / "lab-home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(home))
        patch.setenv("LEAKAGE_LAB_CACHE", str(session_cache))
        with running_app() as port:
            yield port, home


def test_every_page_runs_cleanly_on_a_fresh_start_and_with_the_demo(app, browser_page, tiny_demo,
                                                                   monkeypatch):
    (port, home), page = app, browser_page
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    texts, problems = walk(page, port, "fresh", page_paths(skip=SELF_CONTAINED))
    assert not problems, "fresh start"
    assert BANNER_START in texts["extraction"]  # the demo pages offer the build instead

    install_demo(tiny_demo, home)             # as the banner's build button would, and a run
    record_an_extraction()
    texts, problems = walk(page, port, "demo", page_paths())
    assert not problems, "with the demo"
    assert sorted(sidebar_paths(page)) == sorted(texts)   # every page of app.py was walked
    assert not [path for path, text in texts.items() if BANNER_START in text]

    open_page(page, f"http://127.0.0.1:{port}/extraction")
    heat_map = page.get_by_test_id("stPlotlyChart").filter(has_text="Per token")
    plot_area = heat_map.locator(".nsewdrag").first
    plot_area.wait_for(timeout=30_000)
    assert plot_area.bounding_box()["height"] >= MIN_HEAT_PLOT_PX
    own = (f"http://127.0.0.1:{port}/", "data:", "blob:")
    assert [url for url in requested if not url.startswith(own)] == []   # nothing leaves


def test_moving_the_sigma_slider_changes_the_readout_and_the_url(app, browser_page):
    """σ lives in a fragment (a σ step reruns only the readout and figures), which AppTest does
    not exercise: here the readout, both figures, the URL and the sidebar's preset box follow."""
    (port, _), page = app, browser_page
    page.goto(f"http://127.0.0.1:{port}/bound_explorer", timeout=60_000)
    leakage = (page.get_by_test_id("stMetric").filter(has_text="Leakage L (bits)")
               .get_by_test_id("stMetricValue"))
    leakage.wait_for(timeout=60_000)
    assert leakage.inner_text() == "8.73"
    thumb = page.get_by_test_id("stSlider").filter(has_text="Noise multiplier").get_by_role("slider")
    thumb.focus()
    for sigma in ("0.61", "0.62", "0.63", "0.64", "0.65"):  # one step at a time: a key
        page.keyboard.press("ArrowRight")                   # pressed mid-rerun can be lost
        page.wait_for_url(f"**sigma={sigma}&**", timeout=30_000)
    expect(leakage).not_to_have_text("8.73", timeout=30_000)
    assert float(leakage.inner_text()) < 8.73
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts.last.locator(".gtitle")).to_have_text("b = 40 bits, σ = 0.65", timeout=30_000)
    charts.locator(".gtitle").filter(has_text="your σ = 0.65,").wait_for(timeout=30_000)
    expect(page.get_by_role("combobox", name="Preset")).to_have_value("—", timeout=10_000)


def test_a_whole_number_typed_as_1e308_or_1_5_is_refused_not_read_as_1(app, browser_page):
    """The browser's integer input read "1e308" and "1.5" as 1 (issue #45): each is refused in
    one line with the field's range, and Run is disabled."""
    (port, _), page = app, browser_page
    open_page(page, f"http://127.0.0.1:{port}/lab_gradient_leakage")
    field = (page.get_by_test_id("stNumberInput").filter(has_text="L-BFGS iterations")
             .locator("input").first)
    run = page.get_by_role("button", name="Attack", exact=True)
    for typed, shown in (("1e308", "1.000e+308"), ("1.5", "1.5")):
        field.fill(typed)
        field.press("Enter")
        error = page.locator(ERROR_BOX).filter(has_text="L-BFGS iterations")
        expect(error).to_contain_text("from 1 to 1,000", timeout=30_000)
        expect(error).to_contain_text(shown)
        expect(run).to_be_disabled()


def test_a_researcher_audits_their_uploaded_fine_tune_and_downloads_its_report(
        app, tiny_demo, tmp_path, chromium, browser_page, monkeypatch):
    """Issue #32's "done when": a researcher uploads their fine-tune and its base (zips of the
    tiny demo's models) and their user samples, audits them on the Audit page, downloads the
    report and reads it offline with every curve in a colour of its own; the command its
    provenance gives reads back as the audit the page ran (that such a command, pasted into a
    fresh shell, reruns to the same verdicts: tests/core/test_report_rerun.py)."""
    from core.audit import audit
    from core.commands import build_config, spec_parser
    from core.jobs import get_store, load_result

    uploads = [zipped(scenario.model_dir(name, tiny_demo), tmp_path / f"my-{stem}.zip")
               for name, stem in (("updated", "finetune"), ("base", "base"))]
    report = tmp_path / "downloaded" / "leakage-lab-audit.html"
    (port, home), page = app, browser_page
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    assert not get_store().runs("audit")   # the Audit page will show this audit's result
    for upload in uploads:
        upload_model(page, port, upload)
    audit_and_download(page, port, scenario.data_file("user_samples", tiny_demo), report)
    colours = read_offline(chromium, report)
    assert {"user-inference-roc-linear", "user-inference-roc-log"} <= set(colours)
    for plot, strokes in colours.items():
        assert strokes and not any(PLACEHOLDER.match(s) for s in strokes), (plot, strokes)
        assert len(set(strokes)) == len(strokes), (plot, strokes)   # one colour per curve
    text = report.read_text()
    assert str(home) not in text and str(tmp_path) not in text
    audited = load_result(get_store().runs("audit")[0])   # what the page's audit ran
    command = rerun_command(text)
    assert "my-finetune.zip" in command and "user_samples.jsonl" in command
    rerun = build_config(audit.SPEC, spec_parser(audit.SPEC, "audit").parse_args(
        rerun_words(text)[4:]))
    assert _asked(rerun) == _asked(audited.config)
    # the page ran the models loaded by name; the command names the files uploaded
    assert [Path(rerun.model).read_bytes(), Path(rerun.reference).read_bytes()] == [
        upload.read_bytes() for upload in uploads]


def _asked(config) -> dict:
    """An audit's config but its models and where its report is written."""
    return dataclasses.asdict(config) | {"out": None, "model": None, "reference": None}


_LINKS_AND_IMAGES = """() => [...document.querySelector('[data-testid="stMain"]')
    .querySelectorAll('a, img, image, script, iframe')].map(e => {
        const url = e.getAttribute('href') || e.getAttribute('xlink:href')
                    || e.getAttribute('src') || '#';
        try { return [e.tagName, new URL(url, location.href).href]; }
        catch { return [e.tagName, url]; }
    })"""


def test_the_runs_page_links_to_no_host_of_the_data(app, browser_page, tmp_path_factory,
                                                   monkeypatch):
    """An audit of a model and data made of markup (tests/support/hostile_audit.py), recorded
    last in the module's lab home: its Runs page, every attack's view open, links within the
    app only and draws images inline only."""
    (port, home), page = app, browser_page
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    record_hostile_audit(tmp_path_factory.mktemp("hostile"), home)
    open_page(page, f"http://127.0.0.1:{port}/runs")
    page.get_by_test_id("stExpander").locator("summary").evaluate_all(   # every attack's own
        "summaries => summaries.forEach(summary => summary.click())")       # view, at once
    page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].every("
                           "plot => plot.querySelector('.main-svg'))", timeout=30_000)
    found = page.evaluate(_LINKS_AND_IMAGES)
    assert not [(tag, url) for tag, url in found   # links within the app and inline images only
                if not url.startswith((f"http://127.0.0.1:{port}/", "data:", "blob:"))]
    assert PHISH in page.get_by_test_id("stMain").inner_text()   # quoted, as its characters
