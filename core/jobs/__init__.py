"""Long computations as background jobs, recorded in an SQLite results store.

``submit(spec, config)`` / ``cancel`` / ``run_now(spec, config)`` start work, and
``run_recorded`` runs a spec as its own run inside another job (the audit)
(``core.jobs.runner``); ``Store`` reads and manages the recorded runs (``core.jobs.store``);
``load_config`` / ``load_result`` read a run back as its spec's dataclasses
(``core.jobs.typed``); pages use ``ui.jobs``.
"""

from core.jobs.runner import cancel, get_runner, run_now, run_recorded, submit
from core.jobs.store import Run, Store
from core.jobs.typed import load_config, load_result, spec_of

__all__ = ["Run", "Store", "cancel", "get_runner", "load_config", "load_result", "run_now",
           "run_recorded", "spec_of", "submit"]
