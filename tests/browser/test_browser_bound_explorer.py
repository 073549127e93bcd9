"""A real browser (Debian's Chromium via Playwright) loads the Bound Explorer and moves a slider.

σ lives in a fragment (a σ step reruns only the readout and figures), which AppTest does not
exercise: here the readout, both figures, the URL and the sidebar's preset box must follow."""

import pytest
from playwright.sync_api import expect

from appserver import running_app


@pytest.fixture
def app_url(lab_home):
    with running_app() as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.browser
def test_moving_the_sigma_slider_changes_the_readout_and_the_url(app_url, browser_page):
    page = browser_page
    page.goto(f"{app_url}/bound_explorer", timeout=60_000)
    leakage = (page.get_by_test_id("stMetric").filter(has_text="Leakage L (bits)")
               .get_by_test_id("stMetricValue"))
    leakage.wait_for(timeout=60_000)
    before = leakage.inner_text()
    assert before == "8.73"
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
