"""The tight privacy-profile bound over the red team's grid (issue #44): σ ∈ {0.2, 0.3, 0.5, 0.7,
2}, q ∈ {1e-6, …, 1}, T ∈ {1, …, 10⁷}; every point, in a forked process of its own, must answer
(``core.bounds.summary.summarize(tight=True)``, b = 40 bits) within ``--limit`` seconds or be
refused in one line. Prints each slow, hung or failing point and the slowest times, against the
RDP bound alone on the same points as the in-process baseline, and how far the bound lies above
the best test's leakage where that has a closed form (one step, or q = 1: μ-GDP), which it
must never be below.

    python -m bench.bench_tight_grid [--limit 2] [--hang 30]
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing
import os
import time

SIGMAS = (0.2, 0.3, 0.5, 0.7, 2.0)
QS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
STEPS = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)
GRID = list(itertools.product(SIGMAS, QS, STEPS))
BITS = 40


def one_point(point: tuple[float, float, int],
              tight: bool = True) -> tuple[str, float, float, float]:
    """("ok" or the refusal's first line, seconds, CPU seconds of all its threads, the tight
    bound in bits or NaN) at ``point``. On a quiet machine the seconds are at most the CPU
    seconds; on a busy one the CPU seconds say what the point itself took."""
    from core.bounds.summary import summarize
    from core.errors import UserError

    sigma, q, steps = point
    start, cpu = time.perf_counter(), time.process_time()
    try:
        found = summarize(sigma=sigma, q=q, steps=steps, bits=BITS, delta=1e-5, tight=tight)
        outcome, bits = "ok", found.tight_leakage_bits if tight else math.nan
    except UserError as err:
        outcome, bits = f"refused: {str(err).splitlines()[0]}", math.nan
    return outcome, time.perf_counter() - start, time.process_time() - cpu, bits


def closed_form_bits(sigma: float, q: float, steps: int) -> float | None:
    """log2(TPR/p0) of the best test at FPR p0 = 2^-BITS, capped at BITS, where it has a closed
    form: one step (reject above t = σΦ̄⁻¹(p0)) or q = 1 (μ-GDP, μ = √T/σ); else None."""
    from scipy import stats

    p0, z = 2.0**-BITS, stats.norm.isf(2.0**-BITS)
    if q == 1.0:
        tpr = stats.norm.sf(z - math.sqrt(steps) / sigma)
    elif steps == 1:
        tpr = (1 - q) * p0 + q * stats.norm.sf(z - 1.0 / sigma)
    else:
        return None
    return min(math.log2(tpr / p0), BITS)


def in_a_fork(point, hang_s: float) -> tuple[str, float] | None:
    """``one_point`` in a forked process (the parent imported the bounds already); None if it
    has not answered within ``hang_s`` seconds (the process is then killed)."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=lambda: send.send(one_point(point)), daemon=True)
    child.start()
    answered = receive.poll(hang_s)
    result = receive.recv() if answered else None
    child.kill()
    child.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=2.0, help="seconds a point may take")
    parser.add_argument("--hang", type=float, default=30.0, help="seconds before it counts hung")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {len(GRID)} points")
    rdp = sum(one_point(p, tight=False)[1] for p in GRID)
    results, hung = {}, []
    for point in GRID:
        found = in_a_fork(point, args.hang)
        if found is None:
            hung.append(point)
        else:
            results[point] = found
    _print_times(results, hung, args, rdp)
    _print_against_closed_forms(results)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


def _print_times(results: dict, hung: list, args, rdp: float) -> None:
    slow = {p: r for p, r in results.items() if r[1] > args.limit}
    refused = {p: r for p, r in results.items() if r[0] != "ok"}
    for point, (outcome, seconds, cpu, _) in sorted(slow.items(), key=lambda x: -x[1][1])[:20]:
        print(f"slow  σ={point[0]} q={point[1]:g} T={point[2]:,}: {seconds:.1f} s, CPU {cpu:.1f} s "
              f"({outcome[:80]})")
    for point, (outcome, _, _, _) in list(refused.items())[:10]:
        print(f"refused σ={point[0]} q={point[1]:g} T={point[2]:,}: {outcome[:120]}")
    times = sorted(r[1] for r in results.values())
    cpu = max(results, key=lambda p: results[p][2])
    print(f"hung (> {args.hang:g} s) {len(hung)}: {hung[:10]}")
    print(f"most CPU: σ={cpu[0]} q={cpu[1]:g} T={cpu[2]:,}, {results[cpu][2]:.2f} s of CPU "
          f"({results[cpu][1]:.2f} s wall); points over {args.limit:g} s of CPU: "
          f"{sum(r[2] > args.limit for r in results.values())}")
    print(f"over {args.limit:g} s {len(slow)}, refused {len(refused)}, answered "
          f"{len(results) - len(refused)}; slowest {times[-1]:.2f} s, median "
          f"{times[len(times) // 2]:.2f} s; tight/RDP time over the grid {sum(times) / rdp:.0f}x")


def _print_against_closed_forms(results: dict) -> None:
    over = {p: r[3] - exact for p, r in results.items()
            if r[0] == "ok" and (exact := closed_form_bits(*p)) is not None}
    worst = max(over, key=over.get)
    print(f"against the closed form ({len(over)} points, T = 1 or q = 1, b = {BITS}): "
          f"below it at {sum(v < -1e-6 for v in over.values())}; above it by at most "
          f"{over[worst]:.3f} bits (σ={worst[0]} q={worst[1]:g} T={worst[2]:,}), median "
          f"{sorted(over.values())[len(over) // 2]:.4f}")


if __name__ == "__main__":
    main()
