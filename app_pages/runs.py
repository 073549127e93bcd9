"""Runs: every recorded job. Reopen, compare, download or delete them."""

import streamlit as st

from core.jobs.compare import compare_runs
from core.jobs.store import Store
from ui.jobs import download_buttons, format_seconds, live_progress, show_outcome

st.title("Runs")
st.caption("Every long computation is recorded here with its parameters, progress and result, "
           "and survives closing the tab or restarting the app. "
           "From the shell: `python -m core runs list --json`.")

store = Store()
if flash := st.session_state.pop("runs_flash", None):
    st.success(flash)
kinds = store.kinds()
if not kinds:
    st.info("No runs yet: start one from an attack page.")
    st.stop()

kind = st.selectbox("Kind", ["all", *kinds], key="kind")
runs = store.runs(None if kind == "all" else kind)
st.dataframe([{"id": r.id, "kind": r.kind, "title": r.title, "status": r.status,
               "created": r.summary()["created"],
               "duration": "" if r.duration_s is None else format_seconds(r.duration_s)}
              for r in runs], hide_index=True)
labels = {r.id: f"#{r.id} {r.title} ({r.status})" for r in runs}

view, compare = st.tabs(["Open a run", "Compare two runs"])
with view:
    run = store.get(st.selectbox("Run", list(labels), format_func=labels.get, key="run"))
    st.subheader(f"#{run.id} {run.title}")
    if run.active:
        live_progress(run.id)
    else:
        show_outcome(run)
    st.markdown("**Parameters**")
    st.json(run.params, expanded=1)
    if run.result is not None:
        st.markdown("**Result**")
        st.json(run.result, expanded=1)
    if run.partial is not None and run.status != "done":
        st.markdown("**Partial results** (the last snapshot it reported)")
        st.json(run.partial, expanded=1)
    download_buttons(run.id, f"run-{run.id}")
    if not run.active:
        confirm = st.checkbox(f"Yes, delete run #{run.id}", key=f"confirm-delete-{run.id}")
        if st.button("Delete run", disabled=not confirm):
            store.delete(run.id)
            st.session_state["runs_flash"] = f"Deleted run #{run.id}."
            st.rerun()

with compare:
    ids = list(labels)
    left, right = st.columns(2)
    a = left.selectbox("Run A", ids, format_func=labels.get, key="compare-a")
    b = right.selectbox("Run B", ids, index=min(1, len(ids) - 1), format_func=labels.get,
                        key="compare-b")
    diff = compare_runs(store.get(a), store.get(b))
    only_changes = st.toggle("Only fields that differ", value=True)
    for part, heading in (("params", "Parameters"), ("result", "Result fields (scalars)")):
        rows = [r for r in diff[part] if not (only_changes and r["same"])]
        st.markdown(f"**{heading}**")
        if rows:
            st.dataframe([{"field": r["field"], "A": str(r["a"]), "B": str(r["b"]),
                           "B − A": r["delta"]} for r in rows], hide_index=True)
        else:
            st.caption("No differences." if only_changes else "None.")
