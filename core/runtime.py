"""The progress/cancel protocol every long computation shares (bottom of core: imports nothing).

A computation takes two keyword arguments besides its config:

* ``progress(fraction, message="", partial=None)``, called every few steps with
  ``0 <= fraction <= 1``; ``partial`` is an optional JSON-able snapshot of the results so far,
  which the job runner stores so that an interrupted run keeps what it had;
* ``cancel``, a ``threading.Event``: a long loop checks it and, when set, stops early and
  returns the best result so far with ``stopped_early=True``, or raises ``Cancelled`` when
  there is nothing useful to return yet (modelled on breaching's ``base_attack``).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, Callable, Protocol

# Seconds between a long loop's partial results: as often as the job runner writes progress
# (``core.jobs.runner.REPORT_EVERY_S``); one made more often would be replaced unwritten.
PARTIAL_EVERY_S = 0.5


class Cancelled(Exception):
    """Raised inside a long computation when its cancel event is set."""


class Progress(Protocol):
    def __call__(self, fraction: float, message: str = "", partial: Any = None) -> None: ...


def share(progress: Progress, low: float, high: float, what: str = "") -> Progress:
    """``progress`` for a stage that runs from ``low`` to ``high`` of the whole run, its
    messages prefixed with ``what``."""
    return lambda f, m="", partial=None: progress(low + (high - low) * f, what + m, partial)


def stages(progress: Progress, weights: dict[str, float]) -> dict[str, Progress]:
    """One ``share`` of ``progress`` per stage, in order, each as wide as its weight (e.g. its
    expected seconds), so that the bar moves at an even pace and its ETA holds."""
    total, low, out = sum(weights.values()) or 1.0, 0.0, {}
    for name, weight in weights.items():
        out[name] = share(progress, low / total, (low + weight) / total)
        low += weight
    return out


def no_progress(fraction: float, message: str = "", partial: Any = None) -> None:
    """A progress callback that ignores its reports."""


def print_progress(fraction: float, message: str = "", partial: Any = None) -> None:
    """The CLI's progress callback: one ``[ 42%] message`` line on stderr per report."""
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


def check_cancel(cancel: threading.Event | None) -> None:
    """Raise ``Cancelled`` if the cancel event is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def is_cancelled(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


def clock() -> float:
    """The monotonic clock partial results are paced on (``every``); tests replace it."""
    return time.monotonic()


def every(seconds: float = PARTIAL_EVERY_S) -> Callable[[], bool]:
    """A check that is true at most once per ``seconds`` of ``clock()``, the first time true:
    ``partial=snapshot() if due() else None`` makes a loop's partial results on that clock."""
    last = -math.inf

    def due() -> bool:
        nonlocal last
        now = clock()
        if now - last < seconds:
            return False
        last = now
        return True

    return due


CACHE_NOTE = "texts scored came from the score cache"   # in the notes of ``CacheTally.note``


def is_cache_note(note: str) -> bool:
    """Whether a result's ``note`` says how many scores came from the score cache: about one
    run's time, not its result (``core.scoring.engine.CacheTally.note``)."""
    return CACHE_NOTE in note
