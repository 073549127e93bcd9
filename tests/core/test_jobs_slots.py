"""The per-server job limit and the per-job budget, on the path a page takes (``start_job``,
``submit``): jobs beyond ``LEAKAGE_LAB_MAX_JOBS`` wait in line with their place (shown by the
job panel), a queued job cancels at once, an audit's parts take no slot; a run estimated above
the operator's budget is refused, naming the estimate, the budget and the variable; the CLI
has no budget."""

import dataclasses
import threading
import time

import pytest

import toy_spec
from core.attacks.membership import mia
from core.cost import job_budget as budget
from core.errors import UserError
from core.jobs import Store, cancel, get_runner, run_recorded, submit
from core.jobs.slots import MAX_JOBS_ENV, ordinal, queue_message
from ui.jobs import queued_text

WAIT_S = 20


def _until(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _held(release: threading.Event):
    """The toy spec, its run held until ``release`` is set."""
    def run(config, *, progress, cancel):
        progress(0.5, "working")
        release.wait(WAIT_S)
        return toy_spec.run(config)
    return dataclasses.replace(toy_spec.SPEC, run=run)


def test_jobs_beyond_the_limit_wait_in_line_and_a_queued_one_cancels_at_once(monkeypatch):
    monkeypatch.setenv(MAX_JOBS_ENV, "2")
    releases = [threading.Event() for _ in range(4)]
    try:
        _wait_in_line(releases)
    finally:   # the runner is the process's: no job of this test is left holding a slot
        for release in releases:
            release.set()


def _wait_in_line(releases):
    runs = [submit(_held(r), toy_spec.ToyConfig()) for r in releases]
    third, fourth = runs[2:]
    _until(lambda: [Store().get(r).status for r in runs[:2]] == ["running"] * 2, "two to run")
    _until(lambda: Store().get(third).message and Store().get(fourth).message, "the line")
    assert [Store().get(r).status for r in (third, fourth)] == ["queued", "queued"]
    assert queued_text(Store().get(third)) == (
        "Queued: 1st in line: 2 running ahead of it (this server runs 2 at once).")
    assert Store().get(fourth).message == (
        "2nd in line: 1 queued and 2 running ahead of it (this server runs 2 at once)")

    started = time.monotonic()
    assert cancel(third)
    assert get_runner().wait(third, WAIT_S).status == "cancelled"
    assert time.monotonic() - started < 2       # at once, not when a slot frees
    _until(lambda: Store().get(fourth).message.startswith("1st in line"), "the line to move")

    releases[0].set()                           # a slot frees: the next in line runs
    _until(lambda: Store().get(fourth).status == "running", "the fourth to start")
    for release in releases:
        release.set()
    assert [get_runner().wait(r, WAIT_S).status for r in runs] == [
        "done", "done", "cancelled", "done"]


def test_the_parts_a_job_records_take_no_slot_of_their_own(monkeypatch):
    """With one slot, a job that records runs within itself (as the audit does) still ends."""
    monkeypatch.setenv(MAX_JOBS_ENV, "1")

    def two_parts(config, *, progress, cancel):
        for _ in range(2):
            run_recorded(toy_spec.SPEC, config, progress=progress, cancel=cancel)
        return toy_spec.run(config)

    run_id = submit(dataclasses.replace(toy_spec.SPEC, run=two_parts), toy_spec.ToyConfig())
    assert get_runner().wait(run_id, WAIT_S).status == "done"
    parts = [r for r in Store().runs("toy") if r.parent == run_id]
    assert [p.status for p in parts] == ["done", "done"]


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_limit_refuses_the_job_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(MAX_JOBS_ENV, value)
    with pytest.raises(UserError, match=f"{MAX_JOBS_ENV} must be a positive whole number"):
        submit(toy_spec.SPEC, toy_spec.ToyConfig())


def test_places_read_as_words():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
    assert queue_message(3, 1, 1) == ("3rd in line: 2 queued and 1 running ahead of it "
                                      "(this server runs 1 at once)")


def _start_tiny_mia():
    """A page that starts membership inference on its tiny models, as Run does."""
    import streamlit as st

    from core.attacks.membership import mia
    from ui.jobs import start_job

    st.session_state["started"] = start_job(mia.SPEC, mia.tiny_config(), key="mia")


def _start_from_a_page():
    """(the run the page started or None, its error boxes)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_start_tiny_mia, default_timeout=60).run()
    assert not at.exception
    return at.session_state["started"], [e.value.replace("\\_", "_") for e in at.error]


@pytest.mark.parametrize("variable, value, named", [
    (budget.HOURS_ENV, "0.000001", "time budget of 1 s"),     # 3.6 ms: every run is longer
    (budget.MEMORY_ENV, "0.001", "memory budget of 1 MB"),    # 1 MB: every run needs more
])
def test_a_page_job_above_the_budget_is_refused_before_it_is_queued(monkeypatch, variable,
                                                                    value, named):
    monkeypatch.setenv(variable, value)
    started, [error] = _start_from_a_page()
    assert started is None and Store().runs() == []     # nothing recorded, nothing queued
    assert error.startswith("refused: this run is estimated at about ")
    assert named in error and variable in error and "on this CPU" in error


def test_within_the_budget_or_with_it_off_the_job_runs(monkeypatch):
    monkeypatch.setenv(budget.HOURS_ENV, "0")    # off
    monkeypatch.setenv(budget.MEMORY_ENV, "0")
    started, errors = _start_from_a_page()
    assert errors == [] and get_runner().wait(started, WAIT_S * 3).status == "done"
    monkeypatch.delenv(budget.HOURS_ENV)         # the defaults: a day, this machine's memory
    monkeypatch.delenv(budget.MEMORY_ENV)
    assert budget.max_seconds() == 3600 and budget.max_bytes() == budget.physical_memory()
    budget.check(mia.SPEC, mia.tiny_config())    # the tiny run: seconds, well within
    monkeypatch.setenv(budget.HOURS_ENV, "a day")
    with pytest.raises(UserError, match=f"{budget.HOURS_ENV} must be a number"):
        budget.check(mia.SPEC, mia.tiny_config())


def test_the_cli_has_no_budget(monkeypatch, capsys):
    from core.__main__ import main

    monkeypatch.setenv(budget.HOURS_ENV, "0.000001")
    monkeypatch.setenv(budget.MEMORY_ENV, "0.001")
    assert main(["mia", "--tiny", "--json"]) == 0
    assert Store().runs("mia")[0].status == "done"
