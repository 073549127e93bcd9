"""Bound Explorer recompute time: the default view's numbers, ours vs an Opacus baseline.

1. cold: every number of the default page (readout, Figure 1 for σ ∈ {0.4, 0.6, 1.0}, Figure 2)
   with our vectorised RDP, no cache; baseline: the same with Opacus' compute_rdp
   (orders < 1000, where it is finite).
2. the whole page script (widgets, numbers, plotly figures) run through Streamlit's AppTest,
   with st.cache_data and st.cache_resource cleared first (a cold move) and warm (a move back).
    .venv/bin/python -m bench.bench_bound_page
"""

import time
import warnings
from pathlib import Path

import numpy as np
from opacus.accountants.analysis.rdp import compute_rdp as opacus_compute_rdp

ROOT = Path(__file__).resolve().parents[1]

from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle
from core.bounds.curves import leakage_vs_bits, leakage_vs_steps
import streamlit as st
from streamlit.testing.v1 import AppTest

Q, STEPS, BITS, DELTA, SIGMAS = 2.81e-4, 186_000, 40, 3e-7, (0.4, 0.6, 1.0)


def page_numbers(rdp_fn, orders) -> float:
    """Compute what the default page shows; return the checksum of the leakage curves."""
    total = 0.0
    for sigma in SIGMAS:
        step = rdp_fn(q=Q, noise_multiplier=sigma, steps=1, orders=orders)
        epsilon_balle(orders=orders, rdp=step * STEPS, delta=DELTA)
        fig1 = leakage_vs_bits(orders=orders, step_rdp=step, steps=STEPS, bits=np.arange(1, 129))
        total += fig1["leakage_bits"].sum()
    step = rdp_fn(q=Q, noise_multiplier=0.6, steps=1, orders=orders)
    steps = np.unique(np.round(np.geomspace(1, 10 * STEPS, 80)))
    total += leakage_vs_steps(orders=orders, step_rdp=step, steps=steps, bits=BITS)["leakage_bits"].sum()
    return total


def best_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    warnings.simplefilter("ignore")
    opacus_orders = DEFAULT_ORDERS[DEFAULT_ORDERS < 1000]
    ours = best_ms(lambda: page_numbers(compute_rdp, DEFAULT_ORDERS), 5)
    theirs = best_ms(lambda: page_numbers(lambda **kw: np.asarray(opacus_compute_rdp(**kw)), opacus_orders), 1)
    print(f"default page numbers, cold: ours {ours:.1f} ms ({DEFAULT_ORDERS.size} orders), "
          f"Opacus baseline {theirs:.1f} ms ({opacus_orders.size} orders), ratio {theirs / ours:.1f}x")

    # AppTest, not bare mode: bare mode skips st.fragment bodies, where the page draws its figures.
    page = AppTest.from_file(str(ROOT / "app_pages" / "bound_explorer.py"), default_timeout=60)
    page.run()  # imports and first run

    def cold():
        st.cache_data.clear()
        st.cache_resource.clear()  # the page keeps its Plotly figures there
        page.run()

    cold_ms, warm_ms = best_ms(cold, 5), best_ms(page.run, 5)
    print(f"whole default page script (AppTest, incl. plotly): cold cache {cold_ms:.0f} ms, "
          f"warm cache {warm_ms:.0f} ms; ratio to the Opacus numbers alone {theirs / cold_ms:.1f}x")


if __name__ == "__main__":
    main()
