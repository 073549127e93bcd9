"""This machine's speed: a float32 (bfloat16 on a GPU) matrix product of the model's shape and
one small operation, each timed for a moment on one CPU thread and cached on disk per device
and shape for an hour.

The product is (rows x width) @ (width x MLP width), rows being the tokens one forward call
multiplies at once (1,024 when scoring on the CPU, the batch when generating). A small batch
reads each weight for few rows, so the product cycles through distinct weight matrices, as many
as the model holds (up to 64 MB, or ~0.4 GFLOP of products), which keeps them out of the
processor's caches as the real weights are. Timed passes of ~0.4 GFLOP (at most 4,096
products, so that a tiny model's pass of dispatch-bound products takes milliseconds, not
seconds) run for half a second. The small operation, a product of 64 x 96 by 96 x 384, prices
what a forward call does beyond its products (dispatch, norms, bookkeeping).

One thread, timed by its own CPU time on the CPU (wall time on a GPU): the speed of a core,
whatever other processes take of it. Timed by the wall clock beside 4 busy processes on 2 cores,
the rate fell to 0.42-0.84 of the quiet one, and in fresh processes about to run an attack to
0.15-0.4, which put estimates at load 2.1-2.2x the runs; by CPU time it stays within 8% of the
quiet rate (``python -m bench.bench_rate_clock``, bench/results/rate-clock.txt). The run's
threads are counted by ``core.cost.work``, and a CPU busier than its cores by ``contention``:
the load enters there once.
"""

from __future__ import annotations

import math
import statistics
import time

from core.cost import disk_cache as store

RATE_TTL_S = 3600            # seconds a measured rate is reused
MEASURE_S = 0.5              # seconds of timed passes (at least MIN_PASSES)
MIN_PASSES, MAX_PASSES = 3, 50
WEIGHT_SET_BYTES = 64 * 2**20
FLOPS_PER_PASS = 4e8
MAX_PRODUCTS_PER_PASS = 4096   # a tiny shape's pass: dispatch-bound, ~5 ms, not ~400,000 products
OPS_PER_PASS = 20
OP_SHAPE = (64, 96, 384)     # rows, width, MLP width: a product of the demo GPT-2's layer
SYNC_POWER = 0.5             # contention's extra for torch's threads waiting on each other
_MEASURED: dict[str, dict] = {}   # this process's rates, so a page's rerun reads no file


def bucket(rows: float, device: str) -> int:
    """Rows rounded to a power of two within what one call holds (1,024 on the CPU)."""
    top = 8192 if device == "cuda" else 1024
    return int(min(top, 2 ** round(math.log2(max(rows, 1)))))


def _clock(device: str):
    """This thread's CPU time on the CPU (the moments other processes take are not its work),
    the wall clock on a GPU (the thread waits for the device)."""
    return time.perf_counter if device == "cuda" else time.thread_time


def _timed_passes(device: str, rows: int, width: int, inner: int, count: int) -> float:
    """FLOP/s over timed passes of ``rows x width`` times ``count`` weight matrices, each pass
    going through them as often as ``FLOPS_PER_PASS`` allows (at least once)."""
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(rows, width, dtype=dtype, device=device)
    weights = torch.randn(count, width, inner, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    repeats = max(1, min(MAX_PRODUCTS_PER_PASS // count,
                         int(FLOPS_PER_PASS // (2 * rows * width * inner * count))))

    clock = _clock(device)

    def one_pass() -> float:
        sync()
        start = clock()
        for _ in range(repeats):
            for w in weights:
                x @ w
        sync()
        return clock() - start

    one_pass()   # warm-up: allocation, thread pool
    times: list[float] = []
    deadline = time.perf_counter() + MEASURE_S
    while len(times) < MIN_PASSES or (time.perf_counter() < deadline and len(times) < MAX_PASSES):
        times.append(one_pass())
    return 2 * rows * width * inner * count * repeats * len(times) / sum(times)


def _cached(key: str, measure, *, one_thread: bool) -> float:
    """The value cached under ``key`` (this process, else the disk) if under an hour old, else
    ``measure()`` (on one CPU thread if ``one_thread``), cached."""
    from core.scoring.threads import one_thread as single

    cached = _MEASURED.get(key) or store.get("rates", key)
    if cached is None or time.time() - cached["at"] > RATE_TTL_S:
        with single(one_thread):
            cached = {"value": measure(), "at": time.time()}
        store.put("rates", key, cached)
    _MEASURED[key] = cached
    return cached["value"]


def matmul_rate(device: str, rows: float, width: int, inner: int, weight_bytes: float) -> float:
    """FLOP/s of one thread's products at a model's shape now (see the module doc)."""
    rows = bucket(rows, device)
    matrix = width * inner * 4
    count = max(1, min(int(min(weight_bytes, WEIGHT_SET_BYTES) // matrix),
                       int(FLOPS_PER_PASS // (2 * rows * width * inner))))
    return _cached(f"{device}|1 thread|{rows}x{width}x{inner}x{count}",
                   lambda: _timed_passes(device, rows, width, inner, count), one_thread=True)


def _timed_ops(device: str) -> float:
    """Seconds of one small product ``OP_SHAPE``: the median over passes of their mean."""
    import torch

    rows, width, inner = OP_SHAPE
    x, w = torch.randn(rows, width, device=device), torch.randn(width, inner, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    clock = _clock(device)

    def one_pass() -> float:
        sync()
        start = clock()
        for _ in range(OPS_PER_PASS):
            x @ w
        sync()
        return (clock() - start) / OPS_PER_PASS

    one_pass()
    times: list[float] = []
    deadline = time.perf_counter() + MEASURE_S / 2
    while len(times) < MIN_PASSES or (time.perf_counter() < deadline and len(times) < MAX_PASSES):
        times.append(one_pass())
    return statistics.median(times)


def op_seconds(device: str) -> float:
    """Seconds one small operation takes now on one thread (see the module doc)."""
    return _cached(f"{device}|1 thread|op", lambda: _timed_ops(device), one_thread=True)


def load_per_core() -> float:
    """The last minute's load average over this machine's cores."""
    import os

    return os.getloadavg()[0] / (os.cpu_count() or 1)


def contention(*, threaded: bool = True) -> float:
    """How much slower than its one-thread measures (a core's speed) a run is now: it gets
    ``1 / max(1, load)`` of each core, the load per core past 1 (the fair share), and the threads
    of a ``threaded`` run wait on each other at every operation for ``max(1, load) **
    SYNC_POWER`` more (a run on one thread, such as training a small model, waits on none).
    Beside 4 busy processes on 2 cores, a one-thread run took 2.6x its quiet time (the demo's DP
    fine-tuning) and SmolLM2-135M's two threads 6.8-11x (bench/bench_cost.py)."""
    load = max(1.0, load_per_core())
    return load * (load ** SYNC_POWER if threaded else 1.0)


def busy_note(factor: float) -> list[str]:
    """The assumption a busy CPU adds to an estimate."""
    import os

    if factor <= 1.0:
        return []
    return [f"this CPU is busy (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
            f"cores): runs are counted {factor:.1f}x slower than this machine's measured pace, "
            "a slow-down that varies 2-3x either way from one minute to the next"]
