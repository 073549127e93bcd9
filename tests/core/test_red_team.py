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
from core import sources
from core.attacks.lazy_risk import spec as lr
from core.jobs import Store, submit
from pagetest import page_app, wait_for_run


def test_a_page_cannot_read_a_server_file_into_a_run(demo_home):
    at = page_app("app_pages/lazy_risk.py").run()
    at.text_input(key="lr-train-path").set_value("/etc/passwd").run()
    assert at.button(key="lr-run").disabled   # refused at the form, the file not looked at
    assert "only from its own folder" in at.error[0].value and "/etc" not in at.error[0].value
    # and a request that skips the form is refused by the confined job
    config = lr.LazyRiskConfig(**sources.preset("lazy-risk", "demo") | {"train": "/etc/passwd"})
    submit(lr.SPEC, config, confined=True)
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


# ---------------------------------------------------------------- issue #44's sizes, before work

def _cli(argv: list[str], monkeypatch) -> tuple[int, str]:
    """``python -m core ARGV`` in this process with the run replaced by a tripwire: (exit code,
    or -1 if it reached the run; stderr)."""
    import contextlib
    import io

    import core.jobs
    from core.__main__ import main

    def reached(*args, **kwargs):
        raise SystemExit(-1)

    monkeypatch.setattr(core.jobs, "run_now", reached)
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as stop:
        code = stop.code
    return code, err.getvalue()


def test_100000_new_token_canaries_are_refused_with_the_cap_before_work(monkeypatch):
    """The red team's 100,000 new_tokens canaries passed 5 GB in 30 s."""
    code, err = _cli(["dp-canary-audit", "--tiny", "--kind", "new_tokens", "--canaries",
                      "100000"], monkeypatch)
    [line] = [line for line in err.splitlines() if line.startswith("error:")]   # (and --tiny's
    assert code == 2 and "Traceback" not in err   # model written, with a progress bar)
    assert "m·k = 600,000 tokens" in line and "at most 32,768" in line


def test_20000_canaries_at_block_size_64_are_priced_below_3_gb_before_work():
    """The red team's 20,000 canaries at --block-size 64 (once past 300 s): the cost model
    prices the run before anything is allocated, well under 3 GB (on the tiny model it took
    27 s and 0.69 GB of resident memory, 2-core CPU at load 4.4, against 0.67 GB priced)."""
    from dataclasses import replace

    from core import cost
    from core.dp import canary_audit as ca

    config = replace(ca.tiny_config(), canaries=20_000, block_size=64)
    estimate = cost.estimate(ca.SPEC, config)
    assert estimate is not None and estimate.peak_bytes < 3e9
    assert any("240,000 tokens" in what for what, _ in estimate.parts)   # 20,000 canaries of 12


def test_the_what_ifs_refuse_sizes_past_their_ranges_in_one_line(monkeypatch):
    """user-inference-mitigate and -canary-retrain each hung on a fuzzed value once; every size
    has a range, said before any retraining (all their options: test_cli_fuzz)."""
    for argv, message in (
            (["user-inference-mitigate", "--per-user-limit", "100001"], "from 0 to 100,000"),
            (["user-inference-mitigate", "--dedup-words", "1e308"], "from 2 to 100"),
            (["user-inference-canary-retrain", "--per-side", "101"], "from 1 to 100"),
            (["user-inference-canary-retrain", "--words", "nan"], "from 1 to 100")):
        code, err = _cli(argv, monkeypatch)
        assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
        assert message in err and "Traceback" not in err, (argv, err)
