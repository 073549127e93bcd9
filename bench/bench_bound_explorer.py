"""Bound Explorer in a real browser: how long a σ slider step takes to show, vs the script alone.

Serves the app (``streamlit run app.py``), opens the Bound Explorer in Debian's Chromium
(Playwright), focuses the σ slider and presses → N times. For each step it times, on the
browser's clock, from the key press until
  - the leakage readout shows the value ``core.bounds.summarize`` gives for the new σ,
  - Figure 2's title names the new σ,
  - Figure 1 has a panel titled "σ = …, ε = …" with the new σ,
and prints p50/p95 of each and of all three (what the user waits for). The baseline, measured in
this process: the same σ steps through Streamlit's AppTest (the whole page script, warm cache),
so the ratio says how much of a step is the browser, the websocket and Plotly. The machine's
load average is printed too: on a shared 2-core machine other work stretches every step.
    .venv/bin/python -m bench.bench_bound_explorer [--steps 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from appserver import running_app  # noqa: E402  (tests/support holds the shared server helper)
from core.bounds.summary import summarize  # noqa: E402
from appserver import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

PAGE = ROOT / "app_pages" / "bound_explorer.py"
START_SIGMA, STEP = 0.6, 0.01
PAPER = dict(q=2.81e-4, steps=186_000, bits=40, delta=3e-7)

# From the σ slider's keydown until each of the three shows the new σ, in ms (checked every frame).
WATCH = """([sigma, leakage]) => new Promise((resolve, reject) => {
  const shows = (sel, text) => [...document.querySelectorAll(sel)].some(e => e.textContent.includes(text));
  const checks = {
    readout: () => shows('[data-testid=stMetric]', `Leakage L (bits)${leakage}`),
    figure2: () => shows('[data-testid=stPlotlyChart] .gtitle', `bits, σ = ${sigma}`),
    figure1: () => shows('[data-testid=stPlotlyChart] :is(.gtitle, .annotation-text)', `σ = ${sigma},`),
  };
  let start = null;
  const done = {};
  document.addEventListener('keydown', () => { start = performance.now(); }, {once: true, capture: true});
  const tick = () => {
    if (start !== null)
      for (const [what, check] of Object.entries(checks))
        if (!(what in done) && check()) done[what] = performance.now() - start;
    if (Object.keys(done).length === 3) resolve(done); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  setTimeout(() => reject(new Error(`σ = ${sigma} not shown after 30 s: ${JSON.stringify(done)}`)), 30000);
})"""


def percentiles(values: list[float]) -> str:
    p50, p95 = np.percentile(values, [50, 95])
    return f"p50 {p50:6.0f} ms, p95 {p95:6.0f} ms"


def browser_steps(page_url: str, sigmas: list[float]) -> dict[str, list[float]]:
    """Per σ step: ms from the key press until the readout / each figure shows it."""
    times: dict[str, list[float]] = {"readout": [], "figure2": [], "figure1": [], "all": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(page_url, timeout=60_000)
            page.get_by_test_id("stMetricValue").first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)  # let the first render settle
            thumb = page.get_by_test_id("stSlider").filter(has_text="Noise multiplier").get_by_role("slider")
            thumb.focus()
            page.evaluate(f"() => {{ window.benchWatch = {WATCH}; }}")
            for sigma in sigmas:
                leakage = f"{summarize(sigma=sigma, **PAPER).leakage_bits:.2f}"
                page.evaluate("args => { window.benchStep = window.benchWatch(args); }", [f"{sigma:g}", leakage])
                thumb.press("ArrowRight")
                done = page.evaluate("window.benchStep")
                for what, ms in done.items():
                    times[what].append(ms)
                times["all"].append(max(done.values()))
                page.wait_for_timeout(150)  # a user's pace, so that steps do not queue
        finally:
            browser.close()
    return times


def script_steps(sigmas: list[float]) -> list[float]:
    """ms per σ step of the page script run through Streamlit's AppTest (script and element
    handling, no browser, no websocket; bare mode would skip the fragment that draws the figures),
    after a first pass over the same σ values has warmed the caches as the browser run did."""
    page = AppTest.from_file(str(PAGE), default_timeout=60).run()
    times = []
    for sigma in [*sigmas, *sigmas]:
        start = time.perf_counter()
        page.slider(key="sigma").set_value(sigma).run()
        times.append((time.perf_counter() - start) * 1e3)
    return times[len(sigmas):]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="σ slider key presses (default 30)")
    steps = parser.parse_args().steps
    sigmas = [round(START_SIGMA + STEP * (i + 1), 2) for i in range(steps)]
    with tempfile.TemporaryDirectory(prefix="bench-lab-home-") as home:
        os.environ["LEAKAGE_LAB_HOME"] = home
        with running_app() as port:
            browser = browser_steps(f"http://127.0.0.1:{port}/bound_explorer", sigmas)
        script = script_steps(sigmas)
    print(f"σ slider, {steps} key presses from σ = {START_SIGMA} (Chromium; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}):")
    for what in ("readout", "figure2", "figure1", "all"):
        print(f"  until {what:8s} shows the new σ: {percentiles(browser[what])}")
    print(f"  baseline, the page script through AppTest (warm cache): {percentiles(script)}")
    ratio = np.percentile(browser["all"], 95) / np.percentile(script, 95)
    print(f"p95 browser step / p95 script: {ratio:.1f}x")


if __name__ == "__main__":
    main()
