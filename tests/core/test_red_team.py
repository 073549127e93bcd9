"""Red-team cases of the hardening issue that cut across modules, replayed: a page cannot read a
server file, a killed extraction keeps what it generated. (Malicious checkpoints: see
test_models_hardening; bad CLI input: test_cli_fuzz; concurrent demo builds:
test_demo_build_lock; cancel from another process: test_jobs_cancel; foreign Host headers and
public addresses: test_server_guard.)"""

import os
import signal
import subprocess
import sys
import time

from appserver import ROOT
from core.jobs import Store
from pagetest import page_app, wait_for_run


def test_a_page_cannot_read_a_server_file_into_a_run(demo_home):
    at = page_app("app_pages/lazy_risk.py").run()
    at.text_input(key="lr-train-path").set_value("/etc/passwd").run()
    at.button(key="lr-run").click().run()
    run = wait_for_run("lazy-risk")
    assert run.status == "failed"
    assert "only from its own folder" in run.error and "/etc" not in run.error
    stored = b"".join(p.read_bytes() for p in demo_home.rglob("runs.sqlite*"))
    assert b"root:" not in stored


def _partial_samples(store: Store) -> list[str]:
    runs = store.runs("extraction")
    partial = runs[0].partial if runs else None
    return [text for texts in (partial or {}).get("samples_so_far", {}).values() for text in texts]


def test_a_killed_extraction_keeps_the_samples_it_generated(lab_home):
    command = [sys.executable, "-m", "core", "extract", "--tiny", "--n", "100000",
               "--batch-size", "2", "--tokens", "8", "--strategy", "top-n"]
    job = subprocess.Popen(command, cwd=ROOT, env=os.environ | {"LEAKAGE_LAB_HOME": str(lab_home)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _partial_samples(Store()) and time.monotonic() < deadline:
            assert job.poll() is None, "the extraction ended before it was killed"
            time.sleep(0.2)
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    run = Store().runs("extraction")[0]
    assert run.status == "interrupted"
    assert len(_partial_samples(Store())) >= 8  # at least PARTIAL_EVERY_BATCHES batches of 2


def test_strings_from_runs_are_shown_as_text_not_markdown():
    store = Store()
    run_id = store.create("extraction", {}, title="![x](http://attacker.example/x.png) :red[hi]")
    store.start(run_id)
    store.finish(run_id, "failed", error="no such file: <img src=x>[link](http://a.example)")
    at = page_app("app_pages/runs.py").run()
    assert not at.exception
    # a word holding a URL is inline code (markdown would link a bare URL); the rest escaped
    assert at.subheader[0].value == (f"#{run_id} `![x](http://attacker.example/x.png)` "
                                     "\\:red\\[hi\\]")
    assert "\\<img `src=x>[link](http://a.example)`" in at.error[0].value
