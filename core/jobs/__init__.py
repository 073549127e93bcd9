"""Long computations as background jobs, recorded in an SQLite results store.

``submit(spec, config)`` / ``cancel`` / ``run_now(spec, config)`` start work, and
``run_recorded`` runs a spec as its own run inside another job (the audit)
(``core.jobs.runner``); ``get_store()`` is the process's ``Store`` of the recorded runs, which
lists them (``summaries``, nothing decoded) and reads and manages them (``core.jobs.store``);
``load_config`` / ``load_result`` read a run back as its spec's dataclasses
(``core.jobs.typed``); pages use ``ui.jobs``.
"""

from core.jobs.runner import cancel, get_runner, run_now, run_recorded, submit
from core.jobs.store import Run, RunSummary, Store, get_store
from core.jobs.typed import ReadBackError, load_config, load_result, spec_of

__all__ = ["ReadBackError", "Run", "RunSummary", "Store", "cancel", "get_runner", "get_store",
           "load_config", "load_result", "run_now", "run_recorded", "spec_of", "submit"]
