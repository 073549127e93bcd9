"""A cancel is honoured at the scoring engine's next batch and before each new phase of an
attack: counted in forward passes after the cancel, never in seconds. The page keeps saying
"Cancelling…" until the run has stopped."""

import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from core.audit import audit
from core.jobs import Store, get_runner
from core.runtime import Cancelled


def _armed_forwards(monkeypatch, module, name):
    """Replace ``module.name`` (a forward pass) by one that, once armed, sets the cancel event
    at its first call; returns (the cancel event, the arm event, calls made after the cancel)."""
    cancel, armed, after = threading.Event(), threading.Event(), []
    real = getattr(module, name)

    def forward(*args, **kwargs):
        if cancel.is_set():
            after.append(name)
        elif armed.is_set():
            cancel.set()   # a cancel arrives while this pass runs
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, forward)
    return cancel, armed, after


def _arm_on(armed, prefix):
    def progress(fraction, message="", partial=None):
        if message.startswith(prefix):
            armed.set()
    return progress


def test_a_cancel_in_user_inference_stops_at_the_next_batch_and_no_attack_follows(
        demo_home, monkeypatch):
    from core.scoring import engine

    cancel, armed, after = _armed_forwards(monkeypatch, engine, "_forward")
    config = audit.AuditConfig(model="demo:updated", reference="demo:base",
                               users="demo:user_samples", members="demo:membership",
                               attacks=("user-inference", "mia"), device="cpu")
    with pytest.raises(Cancelled):   # nothing scored yet: nothing to report
        audit.run(config, progress=_arm_on(armed, "user-inference"), cancel=cancel)
    assert cancel.is_set() and after == []
    assert [r.status for r in Store().runs("user-inference")] == ["cancelled"]
    assert not Store().runs("mia")


def test_a_diffrank_cancelled_in_its_search_keeps_its_rows_and_ranks_no_further(
        demo_home, monkeypatch):
    from core.attacks.diffrank import search as diffrank_search

    cancel, armed, after = _armed_forwards(monkeypatch, diffrank_search, "forward_with_cache")
    config = audit.AuditConfig(model="demo:updated", reference="demo:base", device="cpu",
                               attacks=("diffrank",),
                               settings=("diffrank.beam=16", "diffrank.rows=8",
                                         "diffrank.sample_texts=4", "diffrank.sample_tokens=16"))
    result = audit.run(config, progress=_arm_on(armed, "diffrank (1/1): group 1 of 1: length 1"),
                       cancel=cancel)
    # at most the other model's pass of the step in flight: neither the search's next step nor
    # the phrase's own search ran
    assert len(after) <= 1
    entry, = result.entries
    assert entry.status == "cancelled" and entry.verdict.startswith("The ")
    run = Store().get(entry.run_id)
    assert run.status == "cancelled" and run.result["rows"]
    assert any("cancelled before the phrase was ranked" in n for n in run.result["notes"])


def _panel(run_id):
    from ui.jobs import live_progress

    live_progress(run_id)


def test_the_page_says_cancelling_until_the_run_has_stopped():
    stopping = threading.Event()

    def slow_to_stop(progress, cancel):
        progress(0.3, "scoring")
        cancel.wait(20)
        stopping.wait(20)   # winding up, e.g. a batch in flight
        return {"stopped_early": True}

    run_id = get_runner().submit("score", {}, slow_to_stop)
    deadline = time.monotonic() + 20
    while Store().get(run_id).progress != 0.3:
        assert time.monotonic() < deadline, "timed out waiting for the progress report"
        time.sleep(0.01)
    at = AppTest.from_function(_panel, args=(run_id,), default_timeout=30).run()
    at.button(key=f"cancel-run-{run_id}").click().run()
    for _ in range(2):   # the panel's later refreshes, while the run winds up
        at.run()
        assert not at.exception and "Cancelling" in at.info[0].value
        assert at.get("progress")[0].proto.text.startswith("Cancelling… · 30%")
        assert not at.button   # no second Cancel, and no ETA counting down
    stopping.set()
    get_runner().wait(run_id, 20)
    assert Store().get(run_id).status == "cancelled"
