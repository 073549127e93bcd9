"""How many CPU threads torch trains with: one for small models.

Threads over tiny matrices only fight over a busy CPU: on the loaded 2-core machine one thread
trained the DP lab's models ~10x faster and the domain reference's test case in 36 s instead of
592 s; the demo builds also use one thread so that a seed gives the same bytes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

SMALL_MODEL = 20_000_000  # parameters: below, train on one CPU thread


def is_small_on_cpu(model: torch.nn.Module) -> bool:
    """Whether ``model`` is on the CPU with fewer than ``SMALL_MODEL`` parameters."""
    return (next(model.parameters()).device.type == "cpu"
            and sum(p.numel() for p in model.parameters()) < SMALL_MODEL)


@contextmanager
def one_thread(enabled: bool = True) -> Iterator[None]:
    """Within this block (when ``enabled``) torch uses one CPU thread; then as many as before."""
    threads = torch.get_num_threads()
    if enabled:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
