"""Issue #32's "done when", end to end in Chromium: a researcher uploads their fine-tune and its
base (zips of the tiny demo's models) and their user samples, audits them on the Audit page,
downloads the report, reads it offline with every curve in a colour of its own, and reruns it
from the command its provenance gives, pasted into a fresh shell, to the same verdicts."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from appserver import running_app
from core.demo import scenario
from reports import rerun_command, rerun_in_a_fresh_shell, zipped

pytestmark = pytest.mark.browser

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


def test_a_researcher_audits_their_uploaded_fine_tune_and_reruns_the_report(lab_home, tiny_demo,
                                                                            tmp_path, chromium,
                                                                            browser_page):
    from core.jobs import get_store, load_result

    uploads = [zipped(scenario.model_dir(name, tiny_demo), tmp_path / f"my-{stem}.zip")
               for name, stem in (("updated", "finetune"), ("base", "base"))]
    report = tmp_path / "downloaded" / "leakage-lab-audit.html"
    with running_app() as port:
        for upload in uploads:
            upload_model(browser_page, port, upload)
        audit_and_download(browser_page, port, scenario.data_file("user_samples", tiny_demo),
                           report)
    colours = read_offline(chromium, report)
    assert {"user-inference-roc-linear", "user-inference-roc-log"} <= set(colours)
    for plot, strokes in colours.items():
        assert strokes and not any(PLACEHOLDER.match(s) for s in strokes), (plot, strokes)
        assert len(set(strokes)) == len(strokes), (plot, strokes)   # one colour per curve
    text = report.read_text()
    assert str(lab_home) not in text and str(tmp_path) not in text
    audited = load_result(get_store().runs("audit")[0])   # what the page's audit found
    command = rerun_command(text)
    assert "my-finetune.zip" in command and "user_samples.jsonl" in command
    rerun = rerun_in_a_fresh_shell(command, tmp_path / "rerun.html", LEAKAGE_LAB_HOME=str(lab_home))
    assert [(e["attack"], e["verdict"]) for e in rerun["entries"]] == [
        (e.attack, e.verdict) for e in audited.entries]
