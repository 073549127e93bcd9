"""Run a spec as a background job from a page, with a live progress panel::

    if st.button("Run"):
        start_job(SPEC, config)       # usually through ui.forms.run_button
    result = job_panel(SPEC)          # progress, ETA and Cancel while running; the result once done
    if result is not None:            # the spec's result dataclass, read back from the store
        render_result(SPEC.name, result, key="dlg")   # ui.render: the same drawing as on Runs

The run id is kept in ``st.session_state``; a new session (another tab, a server restart)
shows the latest finished run of the spec from the store. While a job runs only the panel refreshes
(``st.fragment(run_every=...)``); when it ends the whole page reruns once to draw the result.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import streamlit as st

from core.cost import job_budget as budget
from core.errors import UserError
from core.jobs import ReadBackError, Run, Store, cancel, get_store, load_result, submit
from core.jobs.export import export_csv, export_json
from core.specs import AttackSpec
from ui.scaleout import chosen_scale_out
from ui.text import plain

REFRESH_S = 0.5


def _state_key(kind: str, key: str | None) -> str:
    return f"job:{key or kind}"


def _find(store: Store, run_id: int | None) -> Run | None:
    try:
        return None if run_id is None else store.get(run_id)
    except UserError:  # deleted meanwhile
        return None


def start_job(spec: AttackSpec, config: Any, *, key: str | None = None,
              title: str | None = None) -> int | None:
    """Submit ``spec`` on ``config`` as a background run; remember it under ``key``.

    If this session's previous run under ``key`` is still going, nothing new starts; a run the
    server refuses (above the operator's budget: ``core.cost.job_budget``) says why, and is None.
    """
    state_key = _state_key(spec.name, key)
    current = _find(get_store(), st.session_state.get(state_key))
    if current is not None and current.active:
        st.warning(f"Run #{current.id} is still going: wait for it or cancel it first.")
        return current.id
    try:
        seconds = budget.check(spec, config, confined=True)   # above the budget: refused
        run_id = submit(spec, config, title=title, confined=True,  # a browser names no server file
                        scale_out=chosen_scale_out(),   # the job keeps this setting to its end
                        estimate_s=seconds)   # its ETA until the bar has moved
    except UserError as err:
        st.error(plain(err))
        return None
    st.session_state[state_key] = run_id
    return run_id


def job_panel(spec: AttackSpec, *, key: str | None = None) -> Any | None:
    """Show this session's run of ``spec`` (under ``key``); return its typed result once it has one.

    Without a run in this session, the latest finished run of ``spec`` in the store that is not
    a part of another (an audit's attacks, a series' audits) is shown.
    """
    store = get_store()
    run = _find(store, st.session_state.get(_state_key(spec.name, key)))
    if run is None:
        run = store.latest(spec.name, whole=True)
        if run is None:
            return None
        st.caption(f"Showing the last finished run, #{run.id} of {_when(run.created)}: "
                   f"{plain(run.title)}. All runs are on the Runs page.")
        return read_result(run)
    if run.active:
        live_progress(run.id)
        return None
    show_outcome(run)
    return read_result(run)


def read_result(run: Run) -> Any | None:
    """The run's typed result (``load_result``); when it cannot be read back, None and a
    one-line error saying why."""
    try:
        return load_result(run)
    except ReadBackError as err:
        st.error(f"Run #{run.id}'s result could not be read back: {plain(err.reason)}")
        return None


CANCELLING = "Cancelling… The run stops at its next check and keeps what it has."


@st.fragment(run_every=REFRESH_S)
def live_progress(run_id: int) -> None:
    """Progress bar, message, ETA and a Cancel button; reruns the page when the run ends.
    Once a cancel is asked (here, in another tab or from the CLI: the store's flag), it says
    "Cancelling…" instead of the ETA and the button, until the run has stopped."""
    run = _find(get_store(), run_id)
    if run is None or not run.active:
        st.rerun()
    if run.status == "queued":
        st.progress(0.0, text=queued_text(run))
    else:
        st.progress(run.progress, text=progress_text(run))
    if run.cancel_requested:
        st.info(CANCELLING)
    elif st.button("Cancel", key=f"cancel-run-{run_id}"):
        if cancel(run_id):  # this process's job, or another's through the store
            st.info(CANCELLING)
        else:
            st.warning("This run has already finished.")


def progress_text(run: Run) -> str:
    """``42% · message · about 1 min 5 s left`` (``Cancelling… · 42% · message`` once a
    cancel is asked: the ETA no longer means anything)."""
    eta = None if run.cancel_requested else run.eta_s
    parts = ("Cancelling…" if run.cancel_requested else "", f"{run.progress:.0%}",
             plain(run.message) if run.message else "",
             f"about {format_seconds(eta)} left" if eta is not None else "")
    return " · ".join(p for p in parts if p)


def queued_text(run: Run) -> str:
    """Why a queued run waits: the reason its runner recorded (the GPU, its place in the line of
    jobs: ``core.jobs.slots``), else nothing holds it."""
    return f"Queued: {plain(run.message)}." if run.message else "Queued: starting…"


def show_outcome(run: Run) -> None:
    """Say how a finished run ended (error, nothing to do on its inputs, interruption, cancel)."""
    if run.status == "failed":
        summary, _, details = (run.error or "unknown error").partition("\n\n")
        st.error(f"Run #{run.id} failed: {plain(summary)}")
        if details:
            with st.expander("Details"):
                st.code(details, language=None)
    elif run.status == "did not apply":
        st.info(f"Run #{run.id} did not apply: {plain(run.error or 'no reason recorded')}")
    elif run.status == "interrupted":
        st.warning(f"Run #{run.id} was interrupted (its process stopped) at {run.progress:.0%}; "
                   "its partial results are kept.")
    elif run.status == "cancelled":
        shown = " Showing what it had found." if run.result is not None else ""
        st.warning(f"Run #{run.id} was cancelled at {run.progress:.0%}.{shown}")


def download_buttons(source: int | Any, name: str, *, key: str = "",
                     table: str | None = None) -> None:
    """JSON and CSV downloads of a run (given its id) or of a result (CSV of its ``table`` field,
    else of the table ``result_table`` finds)."""
    if isinstance(source, int) and not isinstance(source, bool):
        source = get_store().get(source)
    columns = st.columns(2)
    columns[0].download_button("Download JSON", export_json(source), file_name=f"{name}.json",
                               mime="application/json", key=f"{key}download-json-{name}")
    try:
        csv_text = export_csv(source, table)
    except UserError:
        return
    columns[1].download_button("Download CSV", csv_text, file_name=f"{name}.csv",
                               mime="text/csv", key=f"{key}download-csv-{name}")


def format_seconds(seconds: float) -> str:
    """``75.2`` -> ``"1 min 15 s"``."""
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")
