"""ui.jobs: a page starts a job, shows its live progress, cancels it and draws the stored result."""

import threading
import time

from streamlit.testing.v1 import AppTest

from core.jobs import Store


def toy_page():
    import streamlit as st

    from ui.jobs import download_buttons, job_panel, start_job

    gate = st.session_state["gate"]

    def work(progress, cancel):
        progress(0.5, "half done", partial={"rows": [{"x": 1}]})
        while not gate.wait(0.01):
            if cancel.is_set():
                return {"rows": [{"x": 1}], "stopped_early": True}
        return {"rows": [{"x": 1}, {"x": 2}], "stopped_early": False}

    if st.button("Run"):
        start_job("toy", {"n": 2}, work)
    result = job_panel("toy")
    if result is not None:
        st.markdown(f"rows: {len(result['rows'])}")
        download_buttons(result, "toy")


def _page(gate):
    at = AppTest.from_function(toy_page, default_timeout=30)
    at.session_state["gate"] = gate
    return at.run()


def _until_status(status):
    deadline = time.monotonic() + 20
    while Store().runs("toy")[0].status != status or Store().runs("toy")[0].progress < 0.5:
        assert time.monotonic() < deadline, f"timed out waiting for {status}"
        time.sleep(0.01)


def test_page_job_shows_progress_then_its_result_also_in_a_new_session():
    gate = threading.Event()
    at = _page(gate)
    assert not at.exception and not at.markdown  # nothing run yet
    at.button[0].click().run()
    _until_status("running")
    at.run()
    bar = at.get("progress")[0]
    assert "50% · half done" in bar.proto.text
    gate.set()
    _until_status("done")
    at.run()
    assert not at.exception
    assert at.markdown[0].value == "rows: 2"
    assert not at.get("progress")
    again = _page(gate)  # another tab or a restarted server: the stored run is shown
    assert "Showing the last finished run" in again.caption[0].value
    assert again.markdown[0].value == "rows: 2"


def test_cancel_button_stops_the_job_and_keeps_its_result():
    gate = threading.Event()
    at = _page(gate)
    at.button[0].click().run()
    _until_status("running")
    at.run()
    run_id = Store().runs("toy")[0].id
    at.button(key=f"cancel-run-{run_id}").click().run()
    _until_status("cancelled")
    at.run()
    assert not at.exception
    assert f"Run #{run_id} was cancelled" in at.warning[0].value
    assert at.markdown[0].value == "rows: 1"
    assert Store().get(run_id).result == {"rows": [{"x": 1}], "stopped_early": True}
