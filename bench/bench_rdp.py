"""RDP of DP-SGD on a dense order grid: ours (vectorised, log space) vs Opacus, same process.

Prints both times, the speed ratio and the largest relative difference where Opacus is finite.
    .venv/bin/python -m bench.bench_rdp
"""

import time
import warnings

import numpy as np
from opacus.accountants.analysis.rdp import compute_rdp as opacus_compute_rdp

from core.bounds import compute_rdp

ORDERS = np.concatenate([1 + np.arange(1, 500) / 50, np.arange(11, 512)])  # 1000 orders, to 511
SIGMAS = [0.5, 0.8, 1.0, 2.0, 4.0]
SETTINGS = [(0.01, 1000), (2.81e-4, 186_000)]


def timed(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"{ORDERS.size} orders in [{ORDERS.min():g}, {ORDERS.max():g}], sigmas {SIGMAS}")
    for q, steps in SETTINGS:
        ours_s = theirs_s = 0.0
        worst = worst_from_3 = 0.0
        for sigma in SIGMAS:
            t_ours, ours = timed(lambda: compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=ORDERS), 5)
            t_theirs, theirs = timed(
                lambda: opacus_compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=ORDERS), 1)
            ours_s, theirs_s = ours_s + t_ours, theirs_s + t_theirs
            finite = np.isfinite(theirs)
            rel = np.abs(ours[finite] - theirs[finite]) / np.abs(theirs[finite])
            worst = max(worst, rel.max())
            worst_from_3 = max(worst_from_3, rel[ORDERS[finite] >= 3].max())
        print(f"q={q:g} T={steps}: ours {ours_s * 1e3:.1f} ms, Opacus {theirs_s * 1e3:.1f} ms, "
              f"ratio {theirs_s / ours_s:.1f}x; max rel diff {worst:.2e} (orders >= 3: {worst_from_3:.2e})")


if __name__ == "__main__":
    main()
