"""Runs: every recorded job. Reopen it as its page draws it, compare runs of one kind,
download or delete them."""

import pandas as pd
import streamlit as st

from core.errors import UserError
from core.jobs import get_store
from core.jobs.compare import compare_runs
from core.jobs.typed import SHAPE_ERRORS
from core.registry import find_spec
from core.scaleout import describe_placement
from core.serialize import from_jsonable
from ui.jobs import download_buttons, format_seconds, live_progress, read_result, show_outcome
from ui.render import render_result
from ui.text import plain

st.title("Runs")
st.caption("Every computation, from a page or the CLI, is recorded here with its parameters, "
           "progress and result, and survives closing the tab or restarting the app. "
           "From the shell: `python -m core runs list --json`.")

PARTIAL_REFRESH_S = 5.0   # a running run's partial results are redrawn this often
store = get_store()
if flash := st.session_state.pop("runs_flash", None):
    st.success(flash)
kinds = store.kinds()


def show_run(run) -> None:
    """The run as its page draws it, else its stored JSON; its parameters; downloads; delete. A
    running run: its progress panel and what it has found so far."""
    st.subheader(f"#{run.id} {plain(run.title)}")
    if run.placement:
        where = plain(describe_placement(run.placement, address=True))
        st.caption(f"{'Running' if run.active else 'Ran'} on {where}.")
    if run.active:
        live_progress(run.id)
    else:
        show_outcome(run)
    with st.expander("Parameters"):
        st.json(run.params, expanded=1)
    if run.active:
        so_far(run.id)
        return
    result = read_result(run)
    if result is None or not render_result(run.kind, result, key=f"run-{run.id}-"):
        if run.result is not None:
            st.markdown("**Result**")
            st.json(run.result, expanded=1)
        download_buttons(run, f"run-{run.id}", key=f"run-{run.id}-")
    if run.partial is not None and run.status != "done":
        st.markdown("**Partial results** (the last snapshot it reported)")
        st.json(run.partial, expanded=1)
    confirm = st.checkbox(f"Yes, delete run #{run.id}", key=f"confirm-delete-{run.id}")
    if st.button("Delete run", disabled=not confirm, key="delete-run"):
        store.delete(run.id)
        st.session_state["runs_flash"] = f"Deleted run #{run.id}."
        st.rerun()


@st.fragment(run_every=PARTIAL_REFRESH_S)
def so_far(run_id: int) -> None:
    """A running run's last partial snapshot: drawn as its page draws a result when it reads as
    one and the renderer takes it, else summarised in a line."""
    run = store.get(run_id)
    if run.partial is None:
        st.caption("No partial results yet.")
        return
    st.markdown("**So far** (the last snapshot it reported)")
    spec = find_spec(run.kind)
    try:
        partial = from_jsonable(spec.result_type, run.partial) if spec else None
    except SHAPE_ERRORS:
        partial = None
    try:
        if partial is not None and render_result(run.kind, partial, key=f"run-{run_id}-so-far-"):
            return
    except Exception:   # noqa: BLE001 - a snapshot the renderer cannot draw yet: the summary
        pass
    st.caption(plain(partial_summary(run.partial)))


def partial_summary(partial) -> str:
    """``samples_scored: 512 · t_hat_so_far: 61 entries``: a partial snapshot in one line."""
    if not isinstance(partial, dict):
        return f"{len(partial):,} entries" if isinstance(partial, list) else str(partial)[:200]
    parts = [f"{key}: {len(value):,} entries" if isinstance(value, (list, dict))
             else f"{key}: {value}" for key, value in partial.items()
             if isinstance(value, (list, dict)) or len(str(value)) <= 80]
    return " · ".join(parts) or "a snapshot with no summary"


def compare_two(runs, labels: dict) -> None:
    """Two runs of one kind: their differing parameters and their headline metrics side by side."""
    a = st.selectbox("Run A", list(labels), format_func=labels.get, key="compare-a")
    kind = next(r.kind for r in runs if r.id == a)
    same_kind = [r.id for r in runs if r.kind == kind and r.id != a]
    if not same_kind:
        st.info("No other run of this kind to compare with.")
        return
    b = st.selectbox("Run B (same kind)", same_kind, format_func=labels.get, key="compare-b")
    try:
        diff = compare_runs(store.get(a), store.get(b))
    except UserError as err:
        st.error(plain(err))
        return
    only_changes = st.toggle("Only parameters that differ", value=True, key="compare-changes")
    rows = [r for r in diff["params"] if not (only_changes and r["same"])]
    st.markdown("**Parameters**")
    if rows:
        st.dataframe([{"field": r["field"], "A": str(r["a"]), "B": str(r["b"]),
                       "B − A": r["delta"]} for r in rows], hide_index=True, key="compare-params")
    else:
        st.caption("No differences." if only_changes else "None.")
    st.markdown("**Headline metrics**")
    st.dataframe(pd.DataFrame([{"metric": r["field"], "A": r["a"], "B": r["b"],
                                "B − A": r["delta"]} for r in diff["result"]]),
                 hide_index=True, key="compare-metrics")


def list_runs() -> tuple[list, dict]:
    """The table of runs of the chosen kind (their summaries: no result is read); (those runs,
    their labels)."""
    kind = st.selectbox("Kind", ["all", *kinds], key="kind")
    runs = store.summaries(None if kind == "all" else kind)
    st.dataframe([{"id": r.id, "part of": f"#{r.parent}" if r.parent else "", "kind": r.kind,
                   "title": r.title, "status": r.status, "created": r.summary()["created"],
                   "duration": "" if r.duration_s is None else format_seconds(r.duration_s),
                   "where": describe_placement(r.placement)}
                  for r in runs], hide_index=True, key="runs-table")
    return runs, {r.id: f"#{r.id} {r.title} ({r.status})" for r in runs}


if not kinds:   # no st.stop(): the sidebar's settings come after the page
    st.info("No runs yet: start one from an attack page.")
else:
    runs, labels = list_runs()
    view, compare = st.tabs(["Open a run", "Compare two runs"])
    with view:
        show_run(store.get(st.selectbox("Run", list(labels), format_func=labels.get, key="run")))
    with compare:
        compare_two(runs, labels)
