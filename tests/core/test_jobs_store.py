"""The results store: persistence, interruption of dead processes' runs, export, comparison."""

import json
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from core.errors import UserError
from core.jobs.compare import compare_runs
from core.jobs.export import export_csv, export_json, result_table
from core.jobs.store import Store, get_store
from pagetest import ROOT


def _finished_run(store, kind="mia", params=None, result=None, status="done"):
    run_id = store.create(kind, params or {"m": 4})
    store.start(run_id)
    store.finish(run_id, status, result=result)
    return run_id


def test_store_is_wal_and_a_new_connection_reads_what_was_written(lab_home):
    store = Store()
    assert store.path == lab_home / "runs.sqlite"
    run_id = store.create("mia", {"m": 4, "scores": np.array([0.5, 1.0])}, title="first")
    store.start(run_id)
    store.report(run_id, 0.25, "quarter", partial={"seen": 1})
    store.finish(run_id, "done", result={"auroc": np.float64(0.75)})
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    run = Store().get(run_id)  # a brand-new store object and connection
    assert (run.kind, run.title, run.status, run.progress) == ("mia", "first", "done", 1.0)
    assert run.params == {"m": 4, "scores": [0.5, 1.0]}
    assert run.result == {"auroc": 0.75} and run.partial == {"seen": 1}
    assert run.duration_s >= 0 and run.finished >= run.started >= run.created


def test_the_eta_counts_down_while_the_bar_stands_still(monkeypatch):
    import core.jobs.store as store_module

    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "time", lambda: clock[0])
    store = Store()
    run_id = store.create("slow", {})
    store.start(run_id)                    # started at 1000
    clock[0] = 1010.0
    store.report(run_id, 0.25, "a quarter in 10 s")
    assert store.get(run_id).eta_s == pytest.approx(30.0)
    clock[0] = 1020.0                      # no report for 10 s: the ETA falls, never grows
    assert store.get(run_id).eta_s == pytest.approx(20.0)
    clock[0] = 1100.0
    assert store.get(run_id).eta_s == 0.0


def test_a_run_with_an_estimate_has_an_eta_from_its_start(monkeypatch):
    """A bar at 0% (an audit measuring the machine's pace) extrapolates nothing: the estimate
    before Run counts down until the bar passes EARLY, then the bar's own pace takes over."""
    import core.jobs.store as store_module

    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "time", lambda: clock[0])
    store = Store()
    run_id = store.create("slow", {}, estimate_s=600.0)
    store.start(run_id)
    clock[0] = 1020.0
    assert store.get(run_id).eta_s == pytest.approx(580.0)
    assert store.summaries("slow")[0].eta_s == pytest.approx(580.0)   # the listing's too
    store.report(run_id, 0.01, "1% in 20 s")
    assert store.get(run_id).eta_s == pytest.approx(580.0)   # not 1,980 s from 1%
    clock[0] = 1100.0
    store.report(run_id, 0.25, "a quarter in 100 s")
    assert store.get(run_id).eta_s == pytest.approx(300.0)
    assert Store().create("plain", {}) and Store().summaries("plain")[0].estimate_s is None


def test_listing_filters_by_kind_newest_first_and_latest():
    store = Store()
    a = _finished_run(store, "mia")
    b = _finished_run(store, "extraction")
    c = _finished_run(store, "mia", status="failed")
    assert [r.id for r in store.runs()] == [c, b, a]
    assert [r.id for r in store.runs("mia")] == [c, a]
    assert store.kinds() == ["extraction", "mia"]
    assert store.latest("mia").id == a  # the newest *done* run
    assert store.latest("nothing") is None
    assert store.runs("mia")[0].summary()["title"] == "mia (m=4)"


def test_a_part_of_another_run_names_it_and_is_not_the_latest_whole_run():
    store = Store()
    whole = _finished_run(store, "audit")
    part = store.create("audit", {"m": 4}, parent=whole)
    store.start(part)
    store.finish(part, "done")
    assert store.get(part).parent == whole and store.get(whole).parent is None
    assert store.latest("audit").id == part and store.latest("audit", whole=True).id == whole
    assert store.get(part).summary()["parent"] == whole


def test_a_store_of_an_older_version_gets_the_added_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:   # the first release's table: no cancel flag, no parent
        db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
                   "title TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, progress REAL "
                   "NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '', created REAL NOT NULL, "
                   "started REAL, finished REAL, error TEXT, result TEXT, partial TEXT, "
                   "owner TEXT NOT NULL DEFAULT '')")
        db.execute("INSERT INTO runs (kind, title, params, status, created) "
                   "VALUES ('mia', 'old', '{}', 'done', 0)")
    store = Store(path)
    old = store.runs()[0]
    assert old.parent is None and not old.cancel_requested and store.latest("mia", whole=True).id == old.id
    assert store.get(store.create("mia", {}, parent=old.id)).parent == old.id


def test_delete_and_missing_runs():
    store = Store()
    done = _finished_run(store)
    active = store.create("mia", {})
    with pytest.raises(UserError, match="cancel it first"):
        store.delete(active)
    store.delete(done)
    with pytest.raises(UserError, match=f"no run {done}"):
        store.get(done)


def test_running_row_of_a_dead_process_is_marked_interrupted_on_reopen():
    store = Store()
    ours = store.create("mia", {})
    store.start(ours)
    with sqlite3.connect(store.path) as raw:  # a row left behind by a process that died
        raw.execute("INSERT INTO runs (kind, title, params, status, progress, created, started, "
                    "partial, owner) VALUES ('mia', 't', '{}', 'running', 0.5, 1, 1, "
                    "'{\"rows\": [{\"user\": 1}]}', '999999-deadbeef')")
    ghost = store.runs()[0].id
    reopened = Store()
    assert reopened.get(ghost).status == "interrupted"
    assert reopened.get(ghost).partial == {"rows": [{"user": 1}]}
    assert reopened.get(ghost).progress == 0.5
    assert reopened.get(ours).status == "running"  # this process is alive: untouched


def test_runs_of_another_live_process_stay_running_until_it_is_killed():
    """Also for the one store the app keeps per path (``get_store``), opened before the kill."""
    script = textwrap.dedent("""
        import sys
        from core.jobs.store import Store, get_store
        store = Store()
        run_id = store.create("extraction", {"n": 1})
        store.start(run_id)
        store.report(run_id, 0.4, "generating", partial={"found": ["abc"]})
        print(run_id, flush=True)
        sys.stdin.read()
    """)
    store = get_store()
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        run_id = int(child.stdout.readline())
        assert store.get(run_id).status == "running"
        assert [s.status for s in store.summaries()] == ["running"]
    finally:
        child.kill()
        child.wait()
    assert [s.status for s in store.summaries()] == ["interrupted"]
    run = store.get(run_id)
    assert run.status == "interrupted"
    assert (run.progress, run.partial) == (0.4, {"found": ["abc"]})


def test_one_store_per_database_path(lab_home, tmp_path, monkeypatch):
    store = get_store()
    assert store is get_store() and store.path == lab_home / "runs.sqlite"
    assert get_store(lab_home / "sub" / ".." / "runs.sqlite") is store
    monkeypatch.chdir(lab_home)
    assert get_store("runs.sqlite") is store
    other = get_store(tmp_path / "other.sqlite")
    assert other is not store and other is get_store(tmp_path / "other.sqlite")
    (lab_home / "runs.sqlite").unlink()   # removed while the app runs: a fresh one is made
    assert get_store().create("mia", {}) == 1


def test_the_listing_neither_reads_nor_decodes_results_or_partials():
    store = get_store()
    a = _finished_run(store, result={"auroc": 0.5})
    b = _finished_run(store, "extraction")
    with sqlite3.connect(store.path) as raw:   # no JSON reader could take these
        raw.execute("UPDATE runs SET result = 'not json', partial = '{', params = '[' "
                    "WHERE id = ?", (a,))
    with pytest.raises(json.JSONDecodeError):
        store.runs()
    listed = store.summaries()
    assert [(s.id, s.kind, s.status, s.title) for s in listed] == [
        (b, "extraction", "done", "extraction (m=4)"), (a, "mia", "done", "mia (m=4)")]
    assert not hasattr(listed[0], "result") and listed[0].duration_s >= 0
    assert [s.id for s in store.summaries("mia")] == [a] and len(store.summaries(limit=1)) == 1
    assert listed[0].summary() == store.get(b).summary()   # what `runs list` prints


def test_result_table_rules():
    rows = [{"a": 1}, {"a": 2}]
    assert result_table({"rows": rows, "other": [{"x": i} for i in range(5)]}) == rows
    # otherwise the largest table anywhere: records, or equal-length scalar columns
    nested = {"auroc": 0.9, "users": [{"id": 1, "t": 0.5}], "roc": {"fpr": [0, 1, 1], "tpr": [0, 0.5, 1]}}
    assert result_table(nested) == [{"fpr": 0, "tpr": 0}, {"fpr": 1, "tpr": 0.5}, {"fpr": 1, "tpr": 1}]
    assert result_table({"auroc": 0.9, "name": "x", "curve": {"a": 1}}) == [{"auroc": 0.9, "name": "x"}]
    with pytest.raises(UserError, match="JSON"):
        result_table([1, 2, 3])


def test_export_csv_and_json_of_a_run():
    store = Store()
    result = {"stopped_early": False,
              "users": [{"user": "A", "score": 1.5, "tags": ["x"]}, {"user": "B", "score": -0.5}]}
    run = store.get(_finished_run(store, result=result))
    assert export_csv(run).splitlines() == ["user,score,tags", 'A,1.5,"[""x""]"', "B,-0.5,"]
    exported = json.loads(export_json(run))
    assert exported["result"] == result and exported["params"] == {"m": 4}
    assert exported["status"] == "done" and exported["id"] == run.id
    # a run without a result exports its partial snapshot
    partial_id = store.create("mia", {})
    store.report(partial_id, 0.5, partial={"rows": [{"k": 1}]})
    store.finish(partial_id, "cancelled")
    assert export_csv(store.get(partial_id)) == "k\n1\n"
    assert json.loads(export_json({"x": np.nan})) == {"x": None}


def test_compare_runs_reports_param_and_scalar_result_differences():
    store = Store()
    a = store.get(_finished_run(store, params={"m": 4, "model": "demo"},
                                result={"auroc": 0.5, "roc": {"tpr_at_1": 0.1}, "scores": [1, 2]}))
    b = store.get(_finished_run(store, params={"m": 8, "model": "demo"},
                                result={"auroc": 0.75, "roc": {"tpr_at_1": 0.1}}))
    diff = compare_runs(a, b)
    params = {r["field"]: r for r in diff["params"]}
    assert params["m"] == {"field": "m", "a": 4, "b": 8, "same": False, "delta": 4}
    assert params["model"]["same"] and params["model"]["delta"] is None
    result = {r["field"]: r for r in diff["result"]}
    assert set(result) == {"auroc", "roc.tpr_at_1"}  # lists are not scalar fields
    assert result["auroc"]["delta"] == pytest.approx(0.25) and result["roc.tpr_at_1"]["same"]


def test_compare_refuses_runs_of_different_kinds():
    store = Store()
    a = store.get(_finished_run(store, result={"auroc": 0.5}))
    other = store.create("extraction", {"n": 1})
    with pytest.raises(UserError, match="only runs of one kind"):
        compare_runs(a, store.get(other))


def test_compare_uses_the_spec_headline_of_typed_results(monkeypatch):
    import toy_spec
    from core.jobs import get_runner, submit

    toy_spec.register(monkeypatch)
    ids = [submit(toy_spec.SPEC, toy_spec.ToyConfig(n=n)) for n in (2, 3)]
    a, b = (get_runner().wait(i, 20) for i in ids)
    rows = {r["field"]: r for r in compare_runs(a, b)["result"]}
    assert set(rows) == {"total"}  # the spec's headline: top-level numbers of the result
    assert (rows["total"]["a"], rows["total"]["b"], rows["total"]["delta"]) == (3.0, 6.0, 3.0)
