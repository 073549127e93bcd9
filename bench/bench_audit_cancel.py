"""Cancel in a scoring phase of the demo audit: the seconds from Cancel to the run's end.

Each case starts the demo audit (``--preset demo``, on the CPU) as a page does (a background
job), with one attack, waits for the scoring engine's first report in that attack's scoring
phase, presses Cancel (``core.jobs.cancel``) and times until the run has stopped; it also
prints how long the engine's scoring batches took (it checks the cancel before each batch and
between its chunks of positions). The score cache starts empty (in memory and
on disk), so that every case scores. Needs the demo (``python -m core demo build``).

    python -m bench.bench_audit_cancel
"""

from __future__ import annotations

import os
import statistics
import time

# attack -> (settings that shorten what comes before its scoring, a message of that scoring)
CASES = {
    "user-inference": ((), "target model: scored"),
    "mia": (("mia.bootstrap=0",), "target: scored"),
    "lazy-risk": ((), "train set, target model: scored"),
    "extraction": (("extraction.n_samples=64", "extraction.strategies=top-n"),
                   "top-n: scoring (scored"),
}
WAIT_S = 600


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def cancel_case(attack: str) -> tuple[float, list[float], str]:
    """(seconds from Cancel to the run's end, the seconds of each scoring batch of the engine
    until then, the run's status)."""
    from core import sources
    from core.audit import audit
    from core.jobs import Store, cancel, get_runner, submit
    from core.scoring import clear_cache, engine

    clear_cache()
    settings, scoring = CASES[attack]
    config = audit.AuditConfig(**sources.preset("audit", "demo") | {
        "device": "cpu", "attacks": (attack,), "settings": settings})
    batches, real = [], engine._score_batch

    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            batches.append(time.perf_counter() - began)

    engine._score_batch = timed
    try:
        run_id, store = submit(audit.SPEC, config), Store()
        _until(lambda: scoring in store.get(run_id).message or not store.get(run_id).active,
               f"{attack}'s scoring")
        asked = time.perf_counter()
        cancel(run_id)
        get_runner().wait(run_id, WAIT_S)
        return time.perf_counter() - asked, batches, store.get(run_id).status
    finally:
        engine._score_batch = real


def main() -> None:
    os.environ["LEAKAGE_LAB_SCORE_CACHE_MB"] = "0"
    import torch

    print(f"cancel in a scoring phase of the demo audit, CPU, {torch.get_num_threads()} torch "
          f"threads; load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    for attack in CASES:
        stopped, batches, status = cancel_case(attack)
        print(f"  {attack:15s} stopped {stopped:5.2f} s after Cancel ({status}); its scoring "
              f"batches took {statistics.median(batches):.3f} s (median), "
              f"{max(batches):.3f} s at most, over {len(batches)}")


if __name__ == "__main__":
    main()
