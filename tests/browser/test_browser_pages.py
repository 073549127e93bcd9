"""A real browser walks every page of the app (issue #13): on a fresh start (no demo built) and
with the tiny demo installed and an extraction run recorded, and no request leaves the server
(no icon or font from a CDN); then moves the Bound Explorer's σ slider. One app server for the
module, its lab home the module's (the walk comes first).

A page passes when its script finished with no exception, no red error box and no traceback;
on a fresh start the demo pages show the build banner (an info box) instead. With a recorded
extraction run, the extraction page draws its per-token heat map with a readable plot area.

Set WALK_SCREENSHOTS to a folder to keep a screenshot of every page visited.
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from appserver import running_app
from core import sources
from core.attacks.extraction import spec as extraction
from core.jobs import run_now
from core.runtime import no_progress
from demo_fixtures import install_demo
from ui.models import DEMO_BANNER
from ui.nav import SECTIONS

pytestmark = pytest.mark.browser

DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
ERROR_BOX = '[data-testid="stAlertContentError"]'
BANNER_START = DEMO_BANNER.split("**")[0]      # the banner's text before its bold words
MIN_HEAT_PLOT_PX = 150
SCREENSHOTS = os.environ.get("WALK_SCREENSHOTS")


def page_paths() -> list[str]:
    """Every page's URL path: app.py's Home at the root, then each of ``ui.nav.SECTIONS`` (the
    list app.py builds ``st.navigation`` from) at its file's stem, as Streamlit names it."""
    return [""] + [Path(e.path).stem for entries in SECTIONS.values() for e in entries]


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


def walk(page: Page, port: int, shots: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Open every page by its URL; returns each page's text and, for a page that is not clean,
    what is wrong: an exception, a red error box, a traceback."""
    texts, problems = {}, {}
    for path in page_paths():
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
    texts, problems = walk(page, port, "fresh")
    assert not problems, "fresh start"
    assert sorted(sidebar_paths(page)) == sorted(texts)   # every page of app.py was walked
    assert BANNER_START in texts["extraction"]  # the demo pages offer the build instead

    install_demo(tiny_demo, home)             # as the banner's build button would, and a run
    record_an_extraction()
    texts, problems = walk(page, port, "demo")
    assert not problems, "with the demo"
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
