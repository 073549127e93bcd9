"""How many CPU threads torch computes with: one for small models, to train, score and generate.

Threads over tiny matrices only fight over a busy CPU. On the loaded 2-core machine one thread
trained the DP lab's models ~10x faster and the domain reference's test case in 36 s instead of
592 s. Scoring and generation (``python -m bench.bench_threads``, docs/benchmarks.md, 2 cores): on a
quiet CPU torch's default (one thread per core) scored the demo-sized model 1.6x and generated
1.2x faster, tens of milliseconds; beside one busy process one thread was 1.2x and 2.9x faster,
beside two 5.6x and 33x. A server's CPU is seldom quiet (two page jobs at once, other users),
so a model under ``SMALL_MODEL`` runs on one thread; SmolLM2-135M keeps the default (quiet, it
scored 1.6x faster: seconds). The demo builds also use one thread so that a seed gives the same
bytes.

``torch.set_num_threads`` is process-wide: while any block holds one thread, every computation
of the process runs on one (the blocks are counted, so overlapping jobs restore the count the
first one found only when the last one ends).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import torch

SMALL_MODEL = 20_000_000  # parameters: below, compute on one CPU thread

_LOCK = threading.Lock()
_held = {"blocks": 0, "threads_before": 1}


def is_small_on_cpu(model: torch.nn.Module) -> bool:
    """Whether ``model`` is on the CPU with fewer than ``SMALL_MODEL`` parameters."""
    return (next(model.parameters()).device.type == "cpu"
            and sum(p.numel() for p in model.parameters()) < SMALL_MODEL)


@contextmanager
def one_thread(enabled: bool = True) -> Iterator[None]:
    """Within this block (when ``enabled``) torch uses one CPU thread; after the last such block
    of the process ends, as many as before the first began."""
    if not enabled:
        yield
        return
    with _LOCK:
        if _held["blocks"] == 0:
            _held["threads_before"] = torch.get_num_threads()
            torch.set_num_threads(1)
        _held["blocks"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _held["blocks"] -= 1
            if _held["blocks"] == 0:
                torch.set_num_threads(_held["threads_before"])
