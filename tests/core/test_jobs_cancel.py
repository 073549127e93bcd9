"""Cancel across processes: `runs cancel ID`, ``core.jobs.cancel`` and the app's Cancel button
stop a run that another process (a CLI command, another server) is running, through the store's
``cancel_requested`` flag; bad ids are one-line errors."""

import dataclasses
import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from streamlit.testing.v1 import AppTest

from core.__main__ import main
from core.errors import UserError
import toy_spec
from core.jobs import Store, cancel, run_now
from core.jobs.owners import claim_owner as _claim_owner
from core.runtime import Cancelled, no_progress
from pagetest import ROOT

WAIT_S = 30
# `python -m core toy --wait` in a process of its own: it holds at half way until cancelled.
TOY_CLI = textwrap.dedent("""
    import sys
    sys.path.insert(0, "tests/support")
    from core import registry
    registry.ENTRIES["toy"] = registry.Entry("toy_spec", "a toy")
    from core.__main__ import main
    sys.exit(main(["toy", "--wait", "--count", "3", "--json"]))
""")
# Two GPU jobs of a server-like process: the first holds the GPU until cancelled, the second
# waits for it as "queued".
GPU_JOBS = textwrap.dedent("""
    from core.jobs import get_runner

    def hold(progress, cancel):
        progress(0.5, "holding the GPU", partial={"held": True})
        cancel.wait()
        return {"stopped_early": True}

    runner = get_runner()
    ids = [runner.submit("hold", {}, hold, uses_gpu=True),
           runner.submit("after", {}, lambda progress, cancel: {"ran": True}, uses_gpu=True)]
    print(*ids, flush=True)
    for run_id in ids:
        runner.wait(run_id)
""")


def _until(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _start(script):
    return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _halfway_toy_run():
    """The id of the toy run the CLI child runs, once it holds at half way."""
    def holding():
        runs = Store().runs("toy")
        return runs and runs[0].status == "running" and runs[0].partial is not None
    _until(holding, "the CLI run to reach half way")
    return Store().runs("toy")[0].id


def _cli(capsys, *argv):
    try:
        code = main([*argv, "--json"])
    except SystemExit as usage_error:  # argparse refused a word
        code = usage_error.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def toy_child():
    child = _start(TOY_CLI)
    yield child
    child.kill()
    child.communicate()


def test_runs_cancel_stops_a_cli_run_of_another_process_which_keeps_its_result(toy_child,
                                                                               capsys):
    run_id = _halfway_toy_run()
    code, out, _ = _cli(capsys, "runs", "cancel", str(run_id))
    assert code == 0 and json.loads(out) == {"cancel_requested": run_id}
    out, err = toy_child.communicate(timeout=WAIT_S)
    assert toy_child.returncode == 0, err
    printed = json.loads(out)
    run = Store().get(run_id)
    assert (run.status, run.message, run.cancel_requested) == ("cancelled", "stopped early", True)
    assert run.result == printed == {"rows": [{"x": 1, "value": 1.0}], "total": 1.0,
                                     "stopped_early": True, "notes": []}
    code, _, err = _cli(capsys, "runs", "cancel", str(run_id))
    assert code == 2 and f"run {run_id} has already finished (cancelled)" in err


def test_the_apps_cancel_button_stops_a_run_of_another_process(toy_child):
    def page(run_id):
        from ui.jobs import live_progress

        live_progress(run_id)

    run_id = _halfway_toy_run()
    at = AppTest.from_function(page, args=(run_id,), default_timeout=30).run()
    at.button(key=f"cancel-run-{run_id}").click().run()
    assert not at.exception and "Cancelling" in at.info[0].value
    toy_child.communicate(timeout=WAIT_S)
    assert Store().get(run_id).status == "cancelled"


def test_queued_and_running_jobs_of_another_process_are_cancelled_through_the_store():
    child = _start(GPU_JOBS)
    try:
        holding, queued = map(int, child.stdout.readline().split())
        _until(lambda: Store().get(holding).status == "running", "the first job to start")
        assert Store().get(queued).status == "queued"
        assert cancel(queued)  # not a job of this process: through the store
        _until(lambda: not Store().get(queued).active, "the queued job to stop")
        assert Store().get(holding).status == "running"
        assert Store().request_cancel(holding)
        child.communicate(timeout=WAIT_S)
    finally:
        child.kill()
        child.communicate()
    first, second = Store().get(holding), Store().get(queued)
    assert (first.status, first.result, first.partial) == ("cancelled", {"stopped_early": True},
                                                           {"held": True})
    assert (second.status, second.message) == ("cancelled", "cancelled before it started")
    assert second.result is None
    assert not cancel(holding) and not Store().request_cancel(holding)  # finished


def test_a_cli_run_cancelled_before_it_has_a_result_is_a_one_line_error():
    def run(config, *, progress, cancel):  # asks to be cancelled as another process would
        progress(0.3, "training", partial={"epochs": 1})
        Store().request_cancel(Store().runs("toy")[0].id)
        cancel.wait(WAIT_S)
        raise Cancelled()

    spec = dataclasses.replace(toy_spec.SPEC, run=run)
    with pytest.raises(UserError, match=r"run (\d+) was cancelled before it had a result .*"
                                        r"`python -m core runs show \1`"):
        run_now(spec, toy_spec.ToyConfig(), progress=no_progress)
    [stopped] = Store().runs("toy")
    assert (stopped.status, stopped.result, stopped.partial) == ("cancelled", None, {"epochs": 1})


def test_unknown_and_out_of_range_ids_are_one_line_errors(capsys):
    with pytest.raises(UserError, match="no run 424242"):
        cancel(424242)
    code, _, err = _cli(capsys, "runs", "cancel", "424242")
    assert code == 2 and "no run 424242" in err and len(err.strip().splitlines()) == 1
    for argv in (["runs", "show", "99999999999999999999"], ["runs", "cancel", "0"],
                 ["runs", "compare", "1", "9223372036854775808"], ["runs", "list", "--limit=-1"],
                 ["runs", "delete", "1e30"]):
        code, _, err = _cli(capsys, *argv)
        expected = "expected a whole number" if "1e30" in argv else \
            f"must be from 1 to 9,223,372,036,854,775,807, not {argv[-1].split('=')[-1]}"
        assert code == 2 and expected in err, argv
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_store_made_before_the_cancel_flag_gains_it_on_open(lab_home):
    lab_home.mkdir(parents=True)
    with sqlite3.connect(lab_home / "runs.sqlite") as old:  # the schema of the first release
        old.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
                    "title TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, progress "
                    "REAL NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '', created REAL NOT "
                    "NULL, started REAL, finished REAL, error TEXT, result TEXT, partial TEXT, "
                    "owner TEXT NOT NULL DEFAULT '')")
        old.execute("INSERT INTO runs (kind, title, params, status, created, owner) VALUES "
                    "('mia', 'done', '{}', 'done', 1, ''), ('mia', 'live', '{}', 'running', 2, ?)",
                    (_claim_owner(),))
    store = Store()
    done, live = store.runs()[1], store.runs()[0]
    assert (done.status, done.cancel_requested, live.status) == ("done", False, "running")
    assert store.request_cancel(live.id) and store.is_cancel_requested(live.id)
    assert not store.request_cancel(done.id) and not Store().is_cancel_requested(done.id)
