"""The operator's budget of one page job, checked against its estimate (``core.cost.estimate``)
before the page submits it (``ui.jobs.start_job``; ``ui.cost`` disables Run beforehand): a run
estimated above it is refused with a message naming the estimate, the budget and the variable
that sets it.

- ``$LEAKAGE_LAB_MAX_JOB_HOURS`` (default 1): a page job estimated longer is refused. The
  estimate is a guide to the order of magnitude (a loaded machine moves it 2-5x); an hour holds
  every default run a page offers, and on a shared server two longer runs would hold both of its
  few job slots (``core.jobs.slots``) for all that time. Longer runs belong to the CLI, or to a
  server whose operator raises it.
- ``$LEAKAGE_LAB_MAX_JOB_MEMORY_GB`` (default: this machine's physical memory): a run on the CPU
  estimated to need more cannot finish without swapping or being killed for memory, and takes
  every other session's jobs of this process with it. (On a GPU the estimate's peak is GPU
  memory, checked when a model moves there: ``core.models``.)

``0`` turns a budget off. A run that cannot be estimated (a model not here yet, a spec with no
cost model) is not refused: it is left to its own checks, as the page's estimate line leaves it.
The CLI is the operator's own process: it has no budget (``run_now`` never checks it). The
check is the page's, not ``core.jobs.submit``'s: the cost model reads the audit's plan, which
records its parts through ``core.jobs``.
"""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from typing import Any

from core.errors import UserError

HOURS_ENV = "LEAKAGE_LAB_MAX_JOB_HOURS"
MEMORY_ENV = "LEAKAGE_LAB_MAX_JOB_MEMORY_GB"
DEFAULT_HOURS = 1.0

logger = logging.getLogger(__name__)


def _number(variable: str, default: float) -> float:
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise UserError(f"{variable} must be a number from 0 (no budget), not {text!r}: the "
                        "operator sets it where the app starts")
    return value


def physical_memory() -> float:
    """This machine's memory in bytes (0 where the system does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0.0


def max_seconds() -> float:
    """A page job's time budget in seconds (0: none)."""
    return _number(HOURS_ENV, DEFAULT_HOURS) * 3600


def max_bytes() -> float:
    """A page job's memory budget in bytes (0: none)."""
    default = physical_memory() / 1e9
    return _number(MEMORY_ENV, default) * 1e9


def over_budget(estimate) -> str | None:
    """Why a run of ``estimate`` (``core.cost.Estimate``) is refused, or None if within budget."""
    from core.cost import duration, size, summary

    seconds, memory = max_seconds(), max_bytes()
    if seconds and estimate.seconds > seconds:
        limit, variable = f"time budget of {duration(seconds)}", HOURS_ENV
    elif memory and estimate.device == "cpu" and estimate.peak_bytes > memory:
        limit, variable = f"memory budget of {size(memory)}", MEMORY_ENV
    else:
        return None
    return (f"refused: this run is estimated at {summary(estimate)}, above this server's {limit} "
            f"per run started from a page ({variable}, set by the operator): lower its sizes")


def check(spec, config: Any, *, confined: bool = False) -> float | None:
    """Refuse (a ``UserError``) a page job of ``spec`` on ``config`` estimated above the
    budget; ``confined``: the estimate reads only what the job may (``core.paths``). Returns
    the estimated seconds (None when not estimated)."""
    from core import cost, paths

    try:
        with paths.confined() if confined else nullcontext():
            estimate = cost.estimate(spec, config)
    except UserError:   # not estimated: the run's own checks say what is wrong
        return None
    except Exception:   # noqa: BLE001 - an estimate never stops a run
        logger.exception("no estimate for %s", spec.name)
        return None
    refusal = None if estimate is None else over_budget(estimate)
    if refusal:
        raise UserError(refusal)
    return None if estimate is None else estimate.seconds
