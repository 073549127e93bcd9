"""The audit's ETA on the demo: how far the ETA shown at 10% (and 25%, 50%) of the bar is from
the time the run really had left.

Runs ``python -m core audit --preset demo`` (the Audit page's defaults) in process, on the CPU,
from an empty score cache (in memory and on disk), recording (seconds, fraction, ETA) at every
progress report. The ETA is the store's (``RunSummary.eta_s`` at the moment of a report: the
seconds so far times (1 - f) / f). Prints, at each checkpoint of the bar, the ETA, the real
remaining time and their ratio (1.0 is perfect; the bar is within a factor 1.5), and each
attack's share of the bar against its share of the time. Needs the demo
(``python -m core demo build``).

Torch runs on one CPU thread (``--threads``): on a CPU shared with other work, two threads over
the demo's small matrices wait on each other, and the run's speed then swings tenfold with the
others' load (``core.scoring.threads``), which no ETA can foresee.

    python -m bench.bench_audit_eta [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

MARKS = (0.05, 0.10, 0.25, 0.50, 0.75)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--trace", help="also write the (seconds, fraction, message) reports "
                                        "to this JSON file")
    args = parser.parse_args()
    threads = args.threads
    os.environ["LEAKAGE_LAB_SCORE_CACHE_MB"] = "0"   # every score computed, as on a first run
    import torch

    from core import sources
    from core.audit import audit
    from core.jobs import run_now
    from core.scoring import clear_cache

    torch.set_num_threads(threads)
    clear_cache()
    config = audit.AuditConfig(**sources.preset("audit", "demo") | {"device": "cpu"})
    trace: list[tuple[float, float, str]] = []
    started = time.perf_counter()

    def progress(fraction: float, message: str = "", partial=None) -> None:
        trace.append((time.perf_counter() - started, fraction, message))

    load = os.getloadavg()[0]
    result = run_now(audit.SPEC, config, record=True, progress=progress)
    total = time.perf_counter() - started
    print(f"demo audit on the CPU ({threads} torch thread(s)): {total:.1f} s, {len(trace)} "
          f"reports; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after "
          f"({os.cpu_count()} cores)")
    for mark in MARKS:
        at = next(((t, f) for t, f, _ in trace if f >= mark), None)
        if at is None:
            continue
        t, f = at
        eta, left = t * (1 - f) / f, total - t
        print(f"  at {f:5.1%} ({t:6.1f} s): ETA {eta:7.1f} s, really left {left:7.1f} s, "
              f"ETA / real = {eta / max(left, 1e-9):.2f}")
    shares(trace, result, total)
    if args.trace:
        Path(args.trace).write_text(json.dumps(trace), encoding="utf-8")


def shares(trace, result, total: float) -> None:
    """Each attack's part of the bar against its part of the time."""
    for entry in result.entries:
        seen = [(t, f) for t, f, m in trace if m.startswith(f"{entry.attack} (")]
        if seen:
            bar = seen[-1][1] - seen[0][1]
            print(f"  {entry.attack:15s} {entry.seconds:6.1f} s = {entry.seconds / total:5.1%} "
                  f"of the time, {bar:5.1%} of the bar")


if __name__ == "__main__":
    main()
