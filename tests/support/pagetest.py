"""Run a page of the app headless with Streamlit's AppTest."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def page_app(relative_path: str, timeout: float = 60) -> AppTest:
    """An AppTest for ``app_pages/...`` or ``app.py`` given relative to the repository root."""
    return AppTest.from_file(str(ROOT / relative_path), default_timeout=timeout)


def wait_for_run(kind: str, *, count: int = 1, timeout: float = 90):
    """The newest stored run of ``kind``, once ``count`` runs exist and the newest has finished."""
    from core.jobs import Store

    deadline = time.monotonic() + timeout
    while len(Store().runs(kind)) < count or Store().runs(kind)[0].active:
        assert time.monotonic() < deadline, f"the {kind} run did not finish in {timeout:.0f} s"
        time.sleep(0.05)
    return Store().runs(kind)[0]


def record_run(spec, config, result) -> int:
    """Store ``result`` as a finished run of ``spec`` on ``config`` (a page then shows it)."""
    from core.jobs import Store
    from core.serialize import to_jsonable

    store = Store()
    run_id = store.create(spec.name, config)
    store.finish(run_id, "done", result=to_jsonable(result))
    return run_id
