"""Issue #32's researcher, driven in Chromium: uploads on the Models page, an audit on the
Audit page and its report downloaded, then read offline (tests/browser/test_browser_pages.py)."""

import os
import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
SMALL = "\n".join(("extraction.n_samples=8", "extraction.tokens=16", "diffrank.beam=8",
                   "diffrank.rows=8", "diffrank.sample_texts=4", "diffrank.sample_tokens=16"))
PLACEHOLDER = re.compile(r"^rgb\(0, 0, \d+\)$")   # Streamlit's #000001 ... #000040, drawn


def settle(page: Page) -> None:
    """Wait for the script run a widget started to finish."""
    page.wait_for_timeout(300)
    page.locator(DONE).wait_for(timeout=60_000)


def upload_model(page: Page, port: int, file: Path) -> None:
    """Models page: upload a zip of a model folder and load it under its file's name."""
    page.goto(f"http://127.0.0.1:{port}/models", timeout=60_000)
    page.locator(DONE).wait_for(timeout=60_000)
    page.get_by_text("Upload a zip of a model folder").click()
    settle(page)
    page.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(file)
    load = page.get_by_role("button", name="Load", exact=True)
    expect(load).to_be_enabled(timeout=60_000)
    load.click()
    expect(page.get_by_text(f"Loaded {file.stem}:")).to_be_visible(timeout=120_000)


def choose(page: Page, tab: Locator, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    tab.get_by_test_id("stSelectbox").filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def audit_and_download(page: Page, port: int, users: Path, report: Path) -> None:
    """Audit page: the uploads as model and reference, the user samples uploaded, a few
    samples per attack; run it and download the report."""
    page.goto(f"http://127.0.0.1:{port}/audit", timeout=60_000)
    page.locator(DONE).wait_for(timeout=60_000)
    tab = page.get_by_role("tabpanel")   # the one shown: "One model"
    choose(page, tab, "Model to audit", "my-finetune")
    choose(page, tab, "Reference model", "my-base")
    tab.get_by_test_id("stFileUploader").filter(has_text="(user samples)").locator(
        "input[type=file]").set_input_files(users)
    settle(page)
    settings = tab.get_by_role("textbox", name="Settings of the attacks")
    settings.fill(SMALL)
    settings.press("Control+Enter")
    settle(page)
    run = page.get_by_role("button", name="Run the audit")
    expect(run).to_be_enabled(timeout=30_000)
    run.click()
    download = page.get_by_role("button", name="Download the report (HTML)")
    expect(download).to_be_visible(timeout=300_000)
    with page.expect_download(timeout=60_000) as got:
        download.click()
    got.value.save_as(report)


def read_offline(browser, report: Path) -> dict[str, list[str]]:
    """The report opened from disk with the network cut: each plot's curve colours (and a
    screenshot of the whole page at $REPORT_SCREENSHOT, when set)."""
    context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    requests = []
    context.on("request", lambda request: requests.append(request.url))
    page = context.new_page()
    page.goto(report.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    if os.environ.get("REPORT_SCREENSHOT"):
        page.screenshot(path=os.environ["REPORT_SCREENSHOT"], full_page=True)
    colours = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '.js-plotly-plot')].map(plot => [plot.id, [...plot.querySelectorAll(
        '.scatterlayer .trace path.js-line')].map(line => getComputedStyle(line).stroke)]))""")
    context.close()
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests), requests
    return colours
