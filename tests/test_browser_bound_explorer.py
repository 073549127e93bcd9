"""A real browser (Debian's Chromium via Playwright) loads the Bound Explorer and moves a slider."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"streamlit did not open port {port} within {timeout} s")


@pytest.fixture
def app_url(lab_home):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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
