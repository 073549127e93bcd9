"""Reading a stored run back as its spec's result: a result of an older shape is "no typed
result" (its JSON is shown), any other failure is logged and said in one line on the Runs page
and in the job panel."""

import dataclasses
import logging

import pytest
from streamlit.testing.v1 import AppTest

import toy_spec
from core.jobs import Store, load_result
from core.jobs.typed import ReadBackError
from pagetest import page_app


@dataclasses.dataclass
class BrokenResult(toy_spec.ToyResult):
    """A result type whose reading back fails for a reason other than the stored shape."""

    def __post_init__(self):
        raise RuntimeError("the result's module is half-installed")


@pytest.fixture
def stored_toy(monkeypatch):
    """A finished toy run (the toy spec registered), its id."""
    toy_spec.register(monkeypatch)
    store = Store()
    run_id = store.create("toy", toy_spec.ToyConfig(n=2))
    store.finish(run_id, "done", result={"rows": [{"x": 1, "value": 1.0}], "total": 1.0})
    return run_id


def _broken(monkeypatch):
    monkeypatch.setattr(toy_spec, "SPEC",
                        dataclasses.replace(toy_spec.SPEC, result_type=BrokenResult))


def test_a_result_of_an_older_shape_reads_back_as_none(stored_toy):
    store = Store()
    assert load_result(store.get(stored_toy)).total == 1.0
    old = store.create("toy", toy_spec.ToyConfig(n=2))
    store.finish(old, "done", result={"rows": [{"x": 1}], "sum": 1.0})   # fields since renamed
    assert load_result(store.get(old)) is None


def test_any_other_failure_is_logged_and_raised_in_one_line(stored_toy, monkeypatch, caplog):
    _broken(monkeypatch)
    with caplog.at_level(logging.ERROR, logger="core.jobs.typed"), \
            pytest.raises(ReadBackError) as raised:
        load_result(Store().get(stored_toy))
    assert str(raised.value) == (f"run {stored_toy}'s result could not be read back: "
                                 "RuntimeError: the result's module is half-installed")
    assert "half-installed" in caplog.text and "Traceback" in caplog.text


def test_the_runs_page_says_what_failed_instead_of_no_result(stored_toy, monkeypatch):
    _broken(monkeypatch)
    at = page_app("app_pages/runs.py").run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Run #{stored_toy}'s result could not be read back: RuntimeError: the result's module "
        "is half-installed"]
    assert '"total": 1.0' in at.json[-1].value   # the stored JSON is still shown


def _panel_page():
    import streamlit as st

    import toy_spec
    from ui.jobs import job_panel

    if job_panel(toy_spec.SPEC) is None:
        st.markdown("no result")


def test_the_job_panel_says_what_failed(stored_toy, monkeypatch):
    _broken(monkeypatch)
    at = AppTest.from_function(_panel_page, default_timeout=30).run()
    assert not at.exception
    assert "RuntimeError: the result's module is half-installed" in at.error[0].value
