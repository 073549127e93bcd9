"""The tight privacy-profile bound over the red team's grid (issue #44): σ ∈ {0.2, 0.3, 0.5, 0.7,
2}, q ∈ {1e-6, …, 1}, T ∈ {1, …, 10⁷}; every point, in a forked process of its own, must answer
(``core.bounds.summary.summarize(tight=True)``, b = 40 bits) within ``--limit`` seconds or be
refused in one line. Prints each slow, hung or failing point and the slowest times, against the
RDP bound alone on the same points as the in-process baseline.

    python -m bench.bench_tight_grid [--limit 2] [--hang 30]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import time

SIGMAS = (0.2, 0.3, 0.5, 0.7, 2.0)
QS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
STEPS = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)
GRID = list(itertools.product(SIGMAS, QS, STEPS))


def one_point(point: tuple[float, float, int], tight: bool = True) -> tuple[str, float]:
    """("ok" or the refusal's first line, seconds) of the bound at ``point``."""
    from core.bounds.summary import summarize
    from core.errors import UserError

    sigma, q, steps = point
    start = time.perf_counter()
    try:
        summarize(sigma=sigma, q=q, steps=steps, bits=40, delta=1e-5, tight=tight)
        outcome = "ok"
    except UserError as err:
        outcome = f"refused: {str(err).splitlines()[0]}"
    return outcome, time.perf_counter() - start


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
    slow = {p: r for p, r in results.items() if r[1] > args.limit}
    refused = {p: r for p, r in results.items() if r[0] != "ok"}
    for point, (outcome, seconds) in sorted(slow.items(), key=lambda x: -x[1][1])[:20]:
        print(f"slow  σ={point[0]} q={point[1]:g} T={point[2]:,}: {seconds:.1f} s ({outcome[:80]})")
    for point, (outcome, _) in list(refused.items())[:10]:
        print(f"refused σ={point[0]} q={point[1]:g} T={point[2]:,}: {outcome[:120]}")
    times = sorted(r[1] for r in results.values())
    print(f"hung (> {args.hang:g} s) {len(hung)}: {hung[:10]}")
    print(f"over {args.limit:g} s {len(slow)}, refused {len(refused)}, answered "
          f"{len(results) - len(refused)}; slowest {times[-1]:.2f} s, median "
          f"{times[len(times) // 2]:.2f} s; tight/RDP time over the grid {sum(times) / rdp:.0f}x")


if __name__ == "__main__":
    main()
