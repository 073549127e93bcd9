"""Long computations as background jobs, recorded in an SQLite results store.

``submit`` / ``cancel`` / ``run_now`` start work (``core.jobs.runner``); ``Store`` reads and
manages the recorded runs (``core.jobs.store``); pages use ``ui.jobs``.
"""

from core.jobs.runner import cancel, get_runner, run_now, submit
from core.jobs.store import Run, Store

__all__ = ["Run", "Store", "cancel", "get_runner", "run_now", "submit"]
