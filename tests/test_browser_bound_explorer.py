"""A real browser (Debian's Chromium via Playwright) loads the Bound Explorer and moves a slider."""

from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from appserver import running_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def app_url(lab_home):
    with running_app() as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.browser
def test_moving_the_sigma_slider_changes_the_readout_and_the_url(app_url):
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{app_url}/bound_explorer", timeout=60_000)
            leakage = (page.get_by_test_id("stMetric").filter(has_text="Leakage L (bits)")
                       .get_by_test_id("stMetricValue"))
            leakage.wait_for(timeout=60_000)
            before = leakage.inner_text()
            assert before == "8.73"
            thumb = page.get_by_test_id("stSlider").filter(has_text="Noise multiplier").get_by_role("slider")
            thumb.focus()
            for _ in range(20):
                thumb.press("ArrowRight")
            page.wait_for_function(
                "() => [...document.querySelectorAll('[data-testid=stMetric]')]"
                ".some(m => m.innerText.includes('Leakage L') && !m.innerText.includes('8.73'))",
                timeout=30_000,
            )
            assert float(leakage.inner_text()) < 8.73
            page.wait_for_url("**sigma=0.8**", timeout=10_000)
            figure2_title = page.get_by_test_id("stPlotlyChart").nth(1).locator(".gtitle")
            figure2_title.filter(has_text="σ = 0.8").wait_for(timeout=30_000)
        finally:
            browser.close()
