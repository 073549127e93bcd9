"""The one interface every attack and lab shares (modelled on breaching's ``base_attack``).

An attack is a typed config dataclass in, a result dataclass out::

    result = spec.run(config, progress=progress, cancel=cancel)

* ``progress(fraction, message, partial=None)`` is called every few steps with
  ``0 <= fraction <= 1``; ``partial`` is an optional JSON-able snapshot of the results so far,
  which the job runner stores so that an interrupted run keeps what it had;
* ``cancel`` is a ``threading.Event``; a long loop checks it and, when set, stops early and
  returns the best result so far with ``stopped_early=True`` (or raises ``Cancelled`` when
  there is nothing useful to return yet);
* ``spec.tiny_config()`` gives a config that runs in seconds on a CPU (tests, dry runs).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from core.errors import Cancelled


class Progress(Protocol):
    def __call__(self, fraction: float, message: str = "", partial: Any = None) -> None: ...


def no_progress(fraction: float, message: str = "", partial: Any = None) -> None:
    """A progress callback that ignores its reports."""


def check_cancel(cancel: threading.Event | None) -> None:
    """Raise ``Cancelled`` if the cancel event is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def is_cancelled(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


@dataclass(frozen=True)
class AttackSpec:
    """One registry entry: what the attack is called and how to run it."""

    name: str                      # registry key and CLI name, e.g. "dlg"
    title: str                     # shown in the app
    kind: str                      # "privacy" or "integrity"
    config_type: type              # the config dataclass
    run: Callable[..., Any]        # run(config, *, progress=no_progress, cancel=None) -> result
    tiny_config: Callable[[], Any]  # a config that runs in seconds on a CPU
