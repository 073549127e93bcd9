"""ui.jobs: a page starts a job, shows its live progress, cancels it and draws the stored result."""

import time

import pytest

from streamlit.testing.v1 import AppTest

import toy_spec
from core.jobs import Store, cancel, get_runner
from core.jobs.runner import GPU_WAIT_MESSAGE


def toy_page():
    import streamlit as st

    import toy_spec
    from ui.jobs import download_buttons, job_panel, start_job

    if st.button("Run", key="toy-run"):
        start_job(toy_spec.SPEC, toy_spec.ToyConfig(n=2, wait=True))
    result = job_panel(toy_spec.SPEC)
    if result is not None:
        st.markdown(f"rows: {len(result.rows)}")
        download_buttons(result, "toy")


def _page():
    return AppTest.from_function(toy_page, default_timeout=30).run()


def _until_status(status):
    deadline = time.monotonic() + 20
    while Store().runs("toy")[0].status != status or Store().runs("toy")[0].progress < 0.5:
        assert time.monotonic() < deadline, f"timed out waiting for {status}"
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def closed_gate(monkeypatch):
    toy_spec.register(monkeypatch)
    toy_spec.GATE.clear()
    yield
    toy_spec.GATE.set()  # never leave a job thread waiting


def test_page_job_shows_progress_then_its_result_also_in_a_new_session():
    at = _page()
    assert not at.exception and not at.markdown  # nothing run yet
    at.button(key="toy-run").click().run()
    _until_status("running")
    at.run()
    bar = at.get("progress")[0]
    assert "50% · half done" in bar.proto.text
    toy_spec.GATE.set()
    _until_status("done")
    at.run()
    assert not at.exception
    assert at.markdown[0].value == "rows: 2"
    assert not at.get("progress")
    again = _page()  # another tab or a restarted server: the stored run is shown
    assert "Showing the last finished run" in again.caption[0].value
    assert again.markdown[0].value == "rows: 2"


def test_cancel_button_stops_the_job_and_keeps_its_result():
    at = _page()
    at.button(key="toy-run").click().run()
    _until_status("running")
    at.run()
    run_id = Store().runs("toy")[0].id
    at.button(key=f"cancel-run-{run_id}").click().run()
    _until_status("cancelled")
    at.run()
    assert not at.exception
    assert f"Run #{run_id} was cancelled" in at.warning[0].value
    assert at.markdown[0].value == "rows: 1"
    assert Store().get(run_id).result["stopped_early"] is True


def _outcome_page(run_id):
    from core.jobs import Store
    from ui.jobs import show_outcome

    show_outcome(Store().get(run_id))


def test_a_run_cancelled_midway_says_the_fraction_it_had_reached():
    def winds_up_to_100_percent(progress, cancel_event):
        progress(0.07, "scoring")
        cancel_event.wait(20)
        progress(1.0, "stopped")
        return {"stopped_early": True}

    run_id = get_runner().submit("score", {}, winds_up_to_100_percent)
    deadline = time.monotonic() + 20
    while Store().get(run_id).progress != 0.07:
        assert time.monotonic() < deadline, "timed out waiting for the progress report"
        time.sleep(0.01)
    cancel(run_id)
    get_runner().wait(run_id, 20)
    at = AppTest.from_function(_outcome_page, args=(run_id,), default_timeout=30).run()
    assert not at.exception
    assert at.warning[0].value.startswith(f"Run #{run_id} was cancelled at 7%.")


def _queued_page(run_id):
    from ui.jobs import live_progress

    live_progress(run_id)


@pytest.mark.parametrize("gpu_busy", [False, True])
def test_the_queue_message_names_the_gpu_only_when_a_gpu_run_waits_for_it(gpu_busy):
    store = Store()
    run_id = store.create("score", {})  # queued, as a CPU job is until its thread starts
    if gpu_busy:  # what the runner writes for a GPU job behind another
        store.report(run_id, 0.0, GPU_WAIT_MESSAGE)
    at = AppTest.from_function(_queued_page, args=(run_id,), default_timeout=30).run()
    text = at.get("progress")[0].proto.text
    assert not at.exception
    if gpu_busy:
        assert text == f"Queued: {GPU_WAIT_MESSAGE}."
    else:
        assert text == "Queued: starting…" and "GPU" not in text
