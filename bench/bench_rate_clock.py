"""A core's speed timed by the wall clock and by the thread's own CPU time, quiet and beside busy
processes: what ``core.cost.rate`` measures a model's products with.

One thread multiplies SmolLM2-135M's shape (1,024 x 576 by 576 x 1,536) and the demo GPT-2's
(64 x 96 by 96 x 384, through 40 matrices) for half a second, three times, quiet and then with
``--busy`` processes spinning. Prints each rate (GFLOP/s) by both clocks and their ratio, the
share of a core the thread got: by CPU time the rate should not move with the load.

    python -m bench.bench_rate_clock [--busy 4]
"""

from __future__ import annotations

import argparse
import time

from bench.bench_cost import spinners

SHAPES = {"smollm2": (1024, 576, 1536, 1), "demo": (64, 96, 384, 40)}


def rates(rows: int, width: int, inner: int, count: int, seconds: float = 0.5) -> tuple[float, float]:
    """GFLOP/s of one thread's products by the wall clock and by its CPU time."""
    import torch

    x, weights = torch.randn(rows, width), torch.randn(count, width, inner)
    for w in weights:   # warm-up
        x @ w
    wall = cpu = 0.0
    passes = 0
    deadline = time.perf_counter() + seconds
    while passes < 3 or time.perf_counter() < deadline:
        wall_start, cpu_start = time.perf_counter(), time.thread_time()
        for w in weights:
            x @ w
        wall += time.perf_counter() - wall_start
        cpu += time.thread_time() - cpu_start
        passes += 1
    flops = 2 * rows * width * inner * count * passes / 1e9
    return flops / wall, flops / cpu


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=4, help="processes spinning in the second round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for busy in (0, args.busy):
        processes = spinners(busy, warm_up=20.0)
        try:
            for _ in range(3):
                for name, shape in SHAPES.items():
                    wall, cpu = rates(*shape)
                    print(f"busy {busy} {name:8s} wall {wall:6.1f}  CPU time {cpu:6.1f} GFLOP/s  "
                          f"share {wall / cpu:.2f}", flush=True)
        finally:
            for process in processes:
                process.kill()


if __name__ == "__main__":
    main()
