"""Background jobs: progress, results, failures, cancel, the GPU queue and the synchronous path.

The runner's generic ``Runner.submit(kind, params, fn)`` is tested with plain functions; the
spec entry points ``submit`` / ``run_now`` with the toy spec."""

import dataclasses
import threading
import time

import pytest
import torch

from core.errors import UserError
from core.runtime import Cancelled
import toy_spec
from core.jobs import (Store, cancel, get_runner, load_config, load_result, run_now, run_recorded,
                       submit)
from core.jobs.runner import GPU_WAIT_MESSAGE

WAIT_S = 20


def _submit(kind, params, fn, **options):
    return get_runner().submit(kind, params, fn, **options)


def _until(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _status(run_id):
    return Store().get(run_id).status


def test_job_writes_progress_then_commits_its_result():
    release = threading.Event()

    def fn(progress, cancel_event):
        progress(0.5, "halfway", partial={"rows": [{"step": 1}]})
        release.wait(WAIT_S)
        return {"auroc": 0.8, "stopped_early": False}

    run_id = _submit("mia", {"m": 2}, fn, title="tiny")
    _until(lambda: Store().get(run_id).progress == 0.5, "the progress report")
    running = Store().get(run_id)
    assert (running.status, running.message, running.partial) == ("running", "halfway",
                                                                  {"rows": [{"step": 1}]})
    assert running.result is None and running.eta_s is not None
    release.set()
    run = get_runner().wait(run_id, WAIT_S)
    assert (run.status, run.progress, run.title) == ("done", 1.0, "tiny")
    assert run.result == {"auroc": 0.8, "stopped_early": False}
    assert run.params == {"m": 2} and run.error is None


def test_progress_is_throttled_but_the_last_report_is_written():
    def fn(progress, cancel_event):
        for step in range(1, 201):
            progress(step / 400, f"step {step}", partial={"step": step})
        return None

    run = get_runner().wait(_submit("loop", {}, fn), WAIT_S)
    assert run.status == "done" and run.message == "step 200"
    assert run.partial == {"step": 200}


@pytest.mark.parametrize("error, expected", [
    (UserError("batch size must be positive: got 0"), "batch size must be positive: got 0"),
    (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"),
     "out of GPU memory: lower the batch size or pick CPU"),
])
def test_failures_are_stored_with_a_clear_message(error, expected):
    def fn(progress, cancel_event):
        progress(0.3, "scoring", partial={"scored": 3})
        raise error

    run = get_runner().wait(_submit("score", {}, fn), WAIT_S)
    assert run.status == "failed" and run.error == expected
    assert run.partial == {"scored": 3}


def test_unexpected_errors_keep_a_short_traceback():
    def broken(progress, cancel_event):
        return {}["missing"]

    run = get_runner().wait(_submit("score", {}, broken), WAIT_S)
    assert run.status == "failed"
    assert run.error.startswith("KeyError: 'missing'") and "in broken" in run.error


def test_cancel_stores_the_best_result_so_far_as_cancelled():
    started = threading.Event()

    def fn(progress, cancel_event):
        best = 0
        while not cancel_event.is_set():
            best += 1
            progress(0.25, "searching", partial={"best": best})
            started.set()
            time.sleep(0.01)
        return {"best": best, "stopped_early": True}

    run_id = _submit("beam", {}, fn)
    started.wait(WAIT_S)
    assert cancel(run_id)
    run = get_runner().wait(run_id, WAIT_S)
    assert run.status == "cancelled" and run.result["stopped_early"]
    assert run.result["best"] >= run.partial["best"] >= 1
    assert not cancel(run_id)  # no longer running in this process


def test_cancel_raising_cancelled_keeps_the_partial_snapshot():
    def fn(progress, cancel_event):
        progress(0.6, "epoch 3", partial={"epochs": 3})
        cancel_event.wait(WAIT_S)
        raise Cancelled()

    run_id = _submit("train", {}, fn)
    _until(lambda: Store().get(run_id).progress == 0.6, "the progress report")
    cancel(run_id)
    run = get_runner().wait(run_id, WAIT_S)
    assert (run.status, run.result, run.partial) == ("cancelled", None, {"epochs": 3})


@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_a_cancelled_run_keeps_the_fraction_it_had_reached(ending):
    """Reports after the cancel (a job winding up says 100%) change the message, not the bar."""
    def fn(progress, cancel_event):
        progress(0.07, "scoring", partial={"scored": 7})
        cancel_event.wait(WAIT_S)
        progress(1.0, "stopped: wrapping up")
        if ending == "raises":
            raise Cancelled()
        return {"scored": 7, "stopped_early": True}

    run_id = _submit("score", {}, fn)
    _until(lambda: Store().get(run_id).progress == 0.07, "the progress report")
    cancel(run_id)
    run = get_runner().wait(run_id, WAIT_S)
    assert (run.status, run.progress, run.partial) == ("cancelled", 0.07, {"scored": 7})


def test_cancelled_cli_runs_echo_and_keep_the_fraction_before_the_cancel():
    echoed = []

    def run(config, *, progress, cancel):
        progress(0.4, "training")
        cancel.set()  # as Ctrl-C's handler or `runs cancel` would
        progress(1.0, "stopped")
        return toy_spec.ToyResult([], 0.0, stopped_early=True)

    spec = dataclasses.replace(toy_spec.SPEC, run=run)
    run_now(spec, toy_spec.ToyConfig(), progress=lambda f, m="": echoed.append((f, m)))
    assert echoed == [(0.4, "training"), (0.4, "stopped")]
    [stored] = Store().runs("toy")
    assert (stored.status, stored.progress) == ("cancelled", 0.4)


def test_gpu_jobs_run_one_at_a_time_and_cpu_jobs_do_not_wait():
    release = threading.Event()
    events = []

    def gpu_job(name):
        def fn(progress, cancel_event):
            events.append(f"{name} start")
            release.wait(WAIT_S)
            events.append(f"{name} end")
            return name
        return fn

    first = _submit("gpu", {}, gpu_job("first"), uses_gpu=True)
    _until(lambda: _status(first) == "running", "the first GPU job to start")
    second = _submit("gpu", {}, gpu_job("second"), uses_gpu=True)
    cpu = get_runner().wait(_submit("cpu", {}, lambda p, c: "cpu"), WAIT_S)
    assert cpu.status == "done"  # ran while the GPU was busy
    _until(lambda: Store().get(second).message == GPU_WAIT_MESSAGE, "the queue's reason")
    assert _status(second) == "queued" and Store().get(first).message == ""
    release.set()
    runs = [get_runner().wait(i, WAIT_S) for i in (first, second)]
    assert [r.status for r in runs] == ["done", "done"]
    assert events == ["first start", "first end", "second start", "second end"]
    assert runs[1].started >= runs[0].finished


def test_gpu_jobs_submitted_back_to_back_start_in_the_order_submitted():
    started = []

    def gpu_job(index):
        return lambda progress, cancel_event: started.append(index)

    ids = [_submit("gpu", {}, gpu_job(index), uses_gpu=True) for index in range(10)]
    runs = [get_runner().wait(run_id, WAIT_S) for run_id in ids]
    assert [r.status for r in runs] == ["done"] * 10
    assert started == list(range(10))  # each waited for the one submitted before it


def test_a_queued_gpu_job_can_be_cancelled_before_it_starts():
    release = threading.Event()
    ran = []
    first = _submit("gpu", {}, lambda p, c: release.wait(WAIT_S), uses_gpu=True)
    _until(lambda: _status(first) == "running", "the first GPU job to start")
    second = _submit("gpu", {}, lambda p, c: ran.append(1), uses_gpu=True)
    assert cancel(second)
    assert get_runner().wait(second, WAIT_S).status == "cancelled"
    release.set()
    assert get_runner().wait(first, WAIT_S).status == "done"
    assert ran == [] and Store().get(second).started is None


def test_run_now_records_the_run_and_re_raises_failures():
    assert get_runner() is get_runner()
    result = run_now(toy_spec.SPEC, toy_spec.ToyConfig(n=3), progress=lambda *a, **k: None)
    assert result.total == 6.0
    assert run_now(toy_spec.SPEC, toy_spec.ToyConfig(n=2), record=False).total == 3.0
    failing = dataclasses.replace(toy_spec.SPEC, run=lambda c, **k: (_ for _ in ()).throw(
        UserError("empty text file")))
    with pytest.raises(UserError, match="empty text file"):
        run_now(failing, toy_spec.ToyConfig(n=4))
    runs = Store().runs("toy")
    assert [(r.params["n"], r.status) for r in runs] == [(4, "failed"), (3, "done")]
    assert runs[1].title == "toy with 3 rows"


def test_submit_runs_a_spec_and_reads_it_back_typed(monkeypatch):
    toy_spec.register(monkeypatch)
    run = get_runner().wait(submit(toy_spec.SPEC, toy_spec.ToyConfig(n=3, scale=0.5)), WAIT_S)
    assert (run.kind, run.status) == ("toy", "done")
    assert load_config(run) == toy_spec.ToyConfig(n=3, scale=0.5)
    result = load_result(run)
    assert isinstance(result, toy_spec.ToyResult) and isinstance(result.rows[0], toy_spec.Row)
    assert result.total == 3.0 and [r.x for r in result.rows] == [1, 2, 3]
    with pytest.raises(TypeError, match="takes a ToyConfig"):
        submit(toy_spec.SPEC, {"n": 3})


@pytest.mark.parametrize("page_job", [False, True])
def test_the_scale_out_setting_reaches_every_part_of_a_run(page_job):
    """A series runs audits that run attacks, each a recorded part: whether the CLI's ``--ray``
    surrounds the run (``run_now``) or a page submits it with its setting, every level scores
    with that setting, and each run's record says where it ran (Ray itself is never asked:
    nothing here scores)."""
    from core import scaleout

    settings, seen = scaleout.ScaleOut("auto", workers=2), []

    def level(name, inner=None):
        def run(config, progress, cancel):
            seen.append((name, scaleout.current()))
            scaleout.note(workers=2, shards=1)
            if inner is not None:
                run_recorded(inner, config, progress=progress, cancel=cancel)
            return toy_spec.ToyResult([], 0.0)
        return dataclasses.replace(toy_spec.SPEC, name=name, run=run)

    series = level("series", level("audit", level("attack")))
    if page_job:
        get_runner().wait(submit(series, toy_spec.ToyConfig(), scale_out=settings), WAIT_S)
    else:
        with scaleout.using(settings):
            run_now(series, toy_spec.ToyConfig(), progress=lambda *a, **k: None)
    assert seen == [("series", settings), ("audit", settings), ("attack", settings)]
    runs = {r.kind: r for r in Store().runs()}
    assert runs["attack"].parent == runs["audit"].id and runs["audit"].parent == runs["series"].id
    assert {k: r.placement for k, r in runs.items()} == {
        "series": {"address": "auto", "workers": 2, "shards": 3, "resumed": 0},
        "audit": {"address": "auto", "workers": 2, "shards": 2, "resumed": 0},
        "attack": {"address": "auto", "workers": 2, "shards": 1, "resumed": 0}}
