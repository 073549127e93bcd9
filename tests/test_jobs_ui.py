"""ui.jobs: a page starts a job, shows its live progress, cancels it and draws the stored result."""

import time

import pytest

from streamlit.testing.v1 import AppTest

import toy_spec
from core.jobs import Store


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
