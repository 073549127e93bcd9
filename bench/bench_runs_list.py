"""The Runs page's listing with many stored runs: summaries from the one kept store against the
old way (a new ``Store`` per rerun, every run read and its result and partial JSON-decoded).

A temporary store gets ``RUNS`` finished runs, each with a result of ``ROWS`` table rows (about
what a user-inference or extraction run keeps) and a partial snapshot. Each way lists them
``REPEATS`` times in this process; prints the time per listing and the ratio old / new. Run
from the repository root: ``python -m bench.bench_runs_list``.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from core.jobs.store import Store, get_store

RUNS, ROWS, REPEATS = 1000, 200, 5


def fill(path: Path) -> None:
    """``RUNS`` finished runs with sizeable results and partials in the store at ``path``: one
    recorded as a job records it, copied in one transaction."""
    store = Store(path)
    rows = [{"user": f"user-{i}", "t_hat": i / 7, "member": i % 2 == 0, "samples": 24}
            for i in range(ROWS)]
    run_id = store.create("user-inference", {"model": "demo:updated", "seed": 0})
    store.start(run_id)
    store.report(run_id, 0.5, "scoring", partial={"rows": rows[: ROWS // 2]})
    store.finish(run_id, "done", result={"auroc": 0.8, "rows": rows})
    with sqlite3.connect(path) as db:
        columns = ", ".join(r[1] for r in db.execute("PRAGMA table_info(runs)") if r[1] != "id")
        db.executemany(f"INSERT INTO runs ({columns}) SELECT {columns} FROM runs WHERE id = ?",
                       [(run_id,)] * (RUNS - 1))


def per_listing(listing) -> float:
    """Seconds per call of ``listing``, the best of ``REPEATS``."""
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        listed = listing()
        times.append(time.perf_counter() - started)
        assert len(listed) == RUNS
    return min(times)


def main() -> None:
    path = Path(tempfile.mkdtemp(prefix="bench-runs-")) / "runs.sqlite"
    fill(path)
    old = per_listing(lambda: Store(path).runs())
    new = per_listing(lambda: get_store(path).summaries())
    megabytes = path.stat().st_size / 2**20
    print(f"{RUNS} runs, {megabytes:.0f} MB of store")
    print(f"old (new Store, runs() decodes all): {old * 1000:8.1f} ms per listing")
    print(f"new (kept store, summaries()):       {new * 1000:8.1f} ms per listing")
    print(f"ratio old / new: {old / new:.1f}x")


if __name__ == "__main__":
    main()
