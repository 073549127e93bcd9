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




def bench_bounds() -> None:
    """Bounds to the digit vs the order grid (same process), and the tight PLD bound: ours
    (log-space connect-the-dots, tilted FFT) vs dp-accounting's PLD composition."""
    from dp_accounting.pld import privacy_loss_distribution

    from core.bounds.optimal import Mechanism, optimal_leakage, optimal_traditional
    from core.bounds.profile import privacy_profile
    from core.bounds.reconstruction import LN2, leakage_curve, traditional_curve
    from core.bounds.rdp import DEFAULT_ORDERS

    for q, sigma, steps, bits in [(2.81e-4, 0.35, 186_000, 100), (0.004, 1.2, 20_000, 100)]:
        mech = Mechanism(q, sigma, steps)
        t_grid, rdp = timed(lambda: compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=DEFAULT_ORDERS), 3)
        grid = [float(c(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=-bits * LN2)[0]) / LN2
                for c in (leakage_curve, traditional_curve)]
        t_fine, fine = timed(lambda: [f(mech, log_p0=-bits * LN2).bits
                                      for f in (optimal_leakage, optimal_traditional)], 3)
        print(f"σ={sigma} q={q:g} T={steps} b={bits}: L {grid[0]:.4f} -> {fine[0]:.4f}, min h "
              f"{grid[1]:.4f} -> {fine[1]:.4f} bits; grid {t_grid * 1e3:.1f} ms, refined "
              f"{t_fine * 1e3:.1f} ms ({t_fine / t_grid:.1f}x)")
    for sigma in (0.5, 0.3):
        ours, _ = timed(lambda: privacy_profile(q=2.81e-4, noise_multiplier=sigma, steps=186_000), 1)
        theirs, _ = timed(lambda: privacy_loss_distribution.from_gaussian_mechanism(
            standard_deviation=sigma, sampling_prob=2.81e-4,
            value_discretization_interval=1e-4)._pmf_remove.self_compose(186_000), 1)
        print(f"tight PLD profile σ={sigma}, T=186000: ours {ours:.2f} s (to 2^-256), "
              f"dp-accounting {theirs:.2f} s (floor ~1e-10), ratio {theirs / ours:.1f}x")


if __name__ == "__main__":
    main()
    bench_bounds()
