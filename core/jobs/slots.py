"""The per-process job limit: at most ``max_jobs()`` page jobs run at once, the others wait in
line (first come, first served) as ``queued``, their message saying where they stand.

    slots = JobSlots()
    with slots.held(cancel, on_wait=lambda message: store.report(run_id, 0.0, message)):
        ...   # at most max_jobs() blocks of this kind run at once; a cancel while waiting
              # raises Cancelled at once

A job takes its place in line when it is submitted (``join``), so the line keeps the order of
the submits; a GPU job joins it once it has the GPU (``core.jobs.runner``), so that one waiting
for the GPU holds no place ahead of jobs that could run. Only the runner's background jobs take
a slot: the runs a job records within itself (an audit's
attacks, a series' audits: ``run_recorded``) run in the job's own slot, so that a job never
waits for a slot its own parts hold; the CLI runs in its own process and takes none.

Default ``DEFAULT_MAX_JOBS`` = 2: every job computes with all of the machine's cores (torch's
threads) and holds its data, batches and results in memory, so a third job at once makes each
slower and adds its peak memory, while a second one lets a short run go past a long one.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

from core.limits import Limit
from core.runtime import Cancelled

MAX_JOBS = Limit("LEAKAGE_LAB_MAX_JOBS", 2)
MAX_JOBS_ENV = MAX_JOBS.env
POLL_S = 0.1   # how often a waiting job looks at its cancel event


def max_jobs() -> int:
    """How many page jobs may run at once in this process: ``$LEAKAGE_LAB_MAX_JOBS`` (default
    2); a ``UserError`` naming the variable for anything but a whole number from 1."""
    return MAX_JOBS.get()


def ordinal(number: int) -> str:
    """``1`` -> ``"1st"``, ``2`` -> ``"2nd"``, ``11`` -> ``"11th"``, ``23`` -> ``"23rd"``."""
    suffixes = {1: "st", 2: "nd", 3: "rd"}
    teens = 10 <= number % 100 <= 20
    return f"{number}{'th' if teens else suffixes.get(number % 10, 'th')}"


def queue_message(place: int, running: int, limit: int) -> str:
    """Where a waiting job stands: ``"2nd in line: 1 queued and 2 running ahead of it (this
    server runs 2 at once)"``."""
    ahead = [f"{place - 1} queued"] if place > 1 else []
    ahead.append(f"{running} running")
    return (f"{ordinal(place)} in line: {' and '.join(ahead)} ahead of it (this server runs "
            f"{limit} at once)")


class JobSlots:
    """At most ``limit()`` holders at once; the others wait in line, first come first served,
    told where they stand by ``describe``."""

    def __init__(self, limit: Callable[[], int] = max_jobs,
                 describe: Callable[[int, int, int], str] = queue_message) -> None:
        self.limit = limit
        self.describe = describe   # (place, running, limit) -> a waiting job's message
        self._changed = threading.Condition()
        self._line: list[object] = []   # the waiting jobs' tickets, first in line first
        self.running = 0

    def _take(self, ticket: object, limit: int) -> bool:
        """Take a slot for ``ticket`` if it is first in line and one is free (under the lock)."""
        if self._line[0] is ticket and self.running < limit:
            self._line.pop(0)
            self.running += 1
            self._changed.notify_all()   # the others move up the line
            return True
        return False

    def join(self) -> object:
        """A place at the end of the line (taken when the job is submitted, so that the line
        keeps the order of the submits); its ticket for ``held``."""
        ticket = object()
        with self._changed:
            self._line.append(ticket)
        return ticket

    def leave(self, ticket: object) -> None:
        """Out of the line (if still in it); the others move up."""
        with self._changed:
            if ticket in self._line:
                self._line.remove(ticket)
            self._changed.notify_all()

    def _wait(self, ticket: object, cancel: threading.Event,
              on_wait: Callable[[str], None]) -> None:
        """Wait until ``ticket`` takes a slot, telling ``on_wait`` each new place in line."""
        said = ""
        while True:
            with self._changed:
                limit = self.limit()
                if self._take(ticket, limit):
                    return
                if cancel.is_set():
                    raise Cancelled("cancelled while waiting for a free slot")
                message = self.describe(self._line.index(ticket) + 1, self.running, limit)
                if message == said:
                    self._changed.wait(POLL_S)
                    continue
            said = message
            on_wait(message)   # outside the lock: a store write

    @contextmanager
    def held(self, cancel: threading.Event, on_wait: Callable[[str], None] = lambda m: None,
             ticket: object | None = None):
        """Hold a slot for the block, waiting in line (at ``ticket``'s place, else at the end).
        While waiting, ``on_wait`` gets the line's message each time this job's place or the
        running count changes; a cancel raises ``Cancelled``."""
        ticket = self.join() if ticket is None else ticket
        try:
            self._wait(ticket, cancel, on_wait)
        except BaseException:
            self.leave(ticket)
            raise
        try:
            yield
        finally:
            with self._changed:
                self.running -= 1
                self._changed.notify_all()

    def wake(self) -> None:
        """Let the waiting jobs look at their cancel events now (a cancel)."""
        with self._changed:
            self._changed.notify_all()
