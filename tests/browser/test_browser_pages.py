"""A real browser walks every page of the app (issue #13): on a fresh start (no demo built) and
with the tiny demo installed and an extraction run recorded.

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


def click_through(page: Page, port: int, path: str) -> None:
    """Go to ``path`` as a user does, by its sidebar link (the app stays loaded, so no page pays
    for starting the frontend again); wait until the new page's title is drawn (every page's
    ``st.title`` differs from the one before it in the walk) or an exception shows, its script
    run has finished and no element is a skeleton."""
    before = page.locator("h1").first.inner_text()
    page.get_by_test_id("stSidebarNav").locator(f'a[href="http://127.0.0.1:{port}/{path}"]').click()
    page.wait_for_function(
        """([done, before]) => document.querySelector(done) && (document.querySelector(
            '[data-testid="stException"]') || document.querySelector("h1")?.innerText !== before)""",
        arg=[DONE, before], timeout=60_000)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=30_000)


def walk(page: Page, port: int, shots: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Open the first page by its URL and every other by its sidebar link; returns each page's
    text and, for a page that is not clean, what is wrong: an exception, a red error box, a
    traceback."""
    texts, problems = {}, {}
    for index, path in enumerate(page_paths()):
        if index == 0:
            open_page(page, f"http://127.0.0.1:{port}/{path}")
        else:
            click_through(page, port, path)
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


def test_every_page_runs_cleanly_on_a_fresh_start_and_with_the_demo(browser_page, lab_home,
                                                                   tiny_demo):
    page = browser_page
    with running_app() as port:
        texts, problems = walk(page, port, "fresh")
        assert not problems, "fresh start"
        assert sorted(sidebar_paths(page)) == sorted(texts)   # every page of app.py was walked
        assert BANNER_START in texts["extraction"]  # the demo pages offer the build instead

        install_demo(tiny_demo, lab_home)         # as the banner's build button would, and a run
        record_an_extraction()
        texts, problems = walk(page, port, "demo")
        assert not problems, "with the demo"
        assert not [path for path, text in texts.items() if BANNER_START in text]

        open_page(page, f"http://127.0.0.1:{port}/extraction")
        heat_map = page.get_by_test_id("stPlotlyChart").filter(has_text="Per token")
        plot_area = heat_map.locator(".nsewdrag").first
        plot_area.wait_for(timeout=30_000)
        assert plot_area.bounding_box()["height"] >= MIN_HEAT_PLOT_PX
