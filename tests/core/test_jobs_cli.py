"""`python -m core runs ...`: list, show, compare, export and delete recorded runs."""

import json

import pytest

from core.__main__ import main
from core.jobs import Store


def _cli(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def _two_runs():
    store = Store()
    ids = []
    for m, auroc in ((2, 0.6), (4, 0.7)):
        run_id = store.create("mia", {"m": m})
        store.start(run_id)
        store.finish(run_id, "done", result={"auroc": auroc, "rows": [{"user": "A", "t": m}]})
        ids.append(run_id)
    ids.append(store.create("extraction", {"n": 1}))
    return ids


def test_runs_list_show_and_compare(capsys):
    a, b, queued = _two_runs()
    code, runs = _cli(capsys, "runs", "list")
    assert code == 0 and [r["id"] for r in runs] == [queued, b, a]
    code, runs = _cli(capsys, "runs", "list", "--kind", "mia", "--limit", "1")
    assert [(r["id"], r["status"]) for r in runs] == [(b, "done")]
    code, shown = _cli(capsys, "runs", "show", str(a))
    assert shown["params"] == {"m": 2} and shown["result"]["auroc"] == 0.6
    code, diff = _cli(capsys, "runs", "compare", str(a), str(b))
    deltas = {r["field"]: r["delta"] for r in diff["result"]}
    assert deltas == {"auroc": pytest.approx(0.1)}  # scalars only: the rows list is left out


def test_runs_export_and_delete(capsys, tmp_path):
    a, _, queued = _two_runs()
    code, written = _cli(capsys, "runs", "export", str(a), "--format", "csv",
                         "--output", str(tmp_path / "a.csv"))
    assert code == 0 and (tmp_path / "a.csv").read_text() == "user,t\nA,2\n"
    _cli(capsys, "runs", "export", str(a), "--output", str(tmp_path / "a.json"))
    assert json.loads((tmp_path / "a.json").read_text())["result"]["auroc"] == 0.6
    assert _cli(capsys, "runs", "delete", str(a)) == (0, {"deleted": a})
    code, err = _cli(capsys, "runs", "show", str(a))
    assert code == 2 and f"no run {a}" in err
    code, err = _cli(capsys, "runs", "delete", str(queued))
    assert code == 2 and "cancel it first" in err
