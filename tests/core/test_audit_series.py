"""The audit over a checkpoint series: each checkpoint's training step (its name, its
trainer_state.json, else its place), a folder of checkpoints expanded in step order (and only
where a page may read), the checks of the config, one recorded audit per checkpoint holding the
leakage measures, the self-contained report, a cancel that keeps the checkpoints audited, the
CLI, and the page's second tab."""

import dataclasses
import json
import re
import threading

import plotly.offline
import pytest

from core import paths
from core.audit import series
from core.audit.checkpoints import in_step_order, step_from_name
from core.errors import UserError
from core.jobs import Store, run_now
from core.runtime import Cancelled, no_progress
from pagetest import page_app, record_run


def _checkpoint(folder, *, state: dict | None = None, adapter: bool = False):
    """A folder that reads as a model (its weights are never loaded by these checks)."""
    folder.mkdir(parents=True)
    (folder / ("adapter_config.json" if adapter else "config.json")).write_text("{}")
    if state is not None:
        (folder / "trainer_state.json").write_text(json.dumps(state))
    return str(folder)


@pytest.mark.parametrize("name, step", [
    ("checkpoint-500", 500), ("step-0000500", 500), ("runs/lora/step_40/", 40), ("epoch3", None),
    ("model-step1200.gguf", 1200), ("ckpt7", 7), ("gpt2", None), ("demo:updated", None),
    ("final", None), ("7", 7)])
def test_the_step_is_the_number_a_name_ends_in(name, step):
    assert step_from_name(name) == step


def test_the_step_comes_from_the_name_then_trainer_state_then_the_place(tmp_path):
    named = _checkpoint(tmp_path / "checkpoint-500", state={"global_step": 7})   # the name wins
    final = _checkpoint(tmp_path / "final", state={"global_step": 900, "log_history": []})
    broken = _checkpoint(tmp_path / "broken", state=None)
    (tmp_path / "broken" / "trainer_state.json").write_text("{not json")
    assert in_step_order([final, named]) == ([(500, named), (900, final)], True)
    # one checkpoint tells no step: every one is numbered by its place in the list, as given
    assert in_step_order([final, broken, named]) == ([(1, final), (2, broken), (3, named)], False)
    with pytest.raises(UserError, match="are both step 500"):
        in_step_order([named, _checkpoint(tmp_path / "other" / "step-500")])


def test_a_folder_of_checkpoints_expands_in_step_order(tmp_path):
    run = tmp_path / "run"
    made = [_checkpoint(run / f"checkpoint-{n}") for n in (1000, 200, 30)]
    _checkpoint(run / "best", state={"global_step": 450}, adapter=True)
    (run / "logs").mkdir()
    (run / "notes.txt").write_text("not a checkpoint")
    config = series.SeriesConfig(checkpoints=(str(run),), attacks=("extraction",))
    assert config.checkpoints == (made[2], made[1], str(run / "best"), made[0])
    on_base = series.SeriesConfig(checkpoints=(f"{run}@gpt2",), attacks=("extraction",))
    assert on_base.checkpoints[0] == f"{made[2]}@gpt2"
    with paths.confined(), pytest.raises(UserError, match="reads files only from its own folder"):
        series.SeriesConfig(checkpoints=(str(run),), attacks=("extraction",))


def test_a_series_needs_two_checkpoints_and_a_valid_audit(tmp_path):
    with pytest.raises(UserError, match="a series needs from 2 to 50 checkpoints, not 1"):
        series.SeriesConfig(checkpoints=("gpt2",))
    with pytest.raises(UserError, match="from 2 to 50 checkpoints, not 51"):
        series.SeriesConfig(checkpoints=tuple(f"m{i}" for i in range(51)))
    _checkpoint(tmp_path / "run" / "checkpoint-1")
    with pytest.raises(UserError, match="holds 1 checkpoint subfolder .*at least 2"):
        series.SeriesConfig(checkpoints=(str(tmp_path / "run"),))
    with pytest.raises(UserError, match="the audit of each checkpoint: user-inference needs "
                                        "model, reference, users"):
        series.SeriesConfig(checkpoints=("a", "b"), attacks=("user-inference",))
    with pytest.raises(UserError, match="seed must be from 0 to"):
        series.SeriesConfig(checkpoints=("a", "b"), seed=-1)


def test_each_checkpoint_is_a_recorded_audit_in_step_order_with_its_leakage_measures(tmp_path):
    tiny = series.tiny_config()
    config = dataclasses.replace(tiny, checkpoints=tiny.checkpoints[::-1],
                                 out=str(tmp_path / "series.html"))
    result = run_now(series.SPEC, config, progress=no_progress)
    assert [p.step for p in result.points] == [100, 200] and result.steps_known
    runs = {r.id: r for r in Store().runs()}
    audits = [runs[p.audit_run_id] for p in result.points]
    assert [r.kind for r in audits] == ["audit", "audit"]
    assert [r.params["model"] for r in audits] == list(tiny.checkpoints)
    assert all(r.status == "done" and r.params["out"] == "" for r in audits)
    # each audit's attack is a run too, each run a part of the one that ran it
    assert sorted(r.parent for r in Store().runs("mia")) == sorted(r.id for r in audits)
    assert {r.parent for r in audits} == {Store().latest("audit-series", whole=True).id}
    assert Store().latest("audit", whole=True) is None   # the audit page does not show a part
    for point in result.points:
        assert point.status == "done" and "AUROC" in point.verdicts["mia"]
        assert set(point.headline) == {"mia"} and set(point.headline["mia"]) == {"best_auroc"}
    assert result.report == str(tmp_path / "series.html")
    text = (tmp_path / "series.html").read_text()
    for section in ("figure", "table", "verdicts", "dp", "provenance"):
        assert f"<section id='{section}'>" in text
    assert 'id="series-metrics"' in text and "<th>mia: best membership AUROC</th>" in text
    assert "python -m core audit-series --checkpoints" in text
    assert f"step 100: run {result.points[0].audit_run_id}" in text
    ours = text.replace(plotly.offline.get_plotlyjs(), "")   # the library's own strings aside
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", ours)
    assert "<link" not in ours and "<script src" not in ours


def test_a_checkpoint_that_does_not_load_is_a_failed_point(tmp_path):
    tiny = series.tiny_config()
    broken = _checkpoint(tmp_path / "checkpoint-300")   # a config.json and no weights
    result = series.run(dataclasses.replace(tiny, checkpoints=(*tiny.checkpoints, broken)))
    assert [p.status for p in result.points] == ["done", "done", "failed"]
    assert "no *.safetensors weights" in result.points[2].error and not result.stopped_early
    failed = Store().get(result.points[2].audit_run_id)   # its run, and why it failed
    assert failed.status == "failed" and "no *.safetensors weights" in failed.error
    assert "Not audited: " in series.render_series_report(result)


def test_a_cancel_after_the_first_checkpoint_keeps_it():
    cancel = threading.Event()

    def progress(fraction, message="", partial=None):
        if message.startswith("step 200"):
            cancel.set()

    result = series.run(series.tiny_config(), progress=progress, cancel=cancel)
    assert result.stopped_early and [p.step for p in result.points] == [100]
    assert result.points[0].status == "done" and result.points[0].headline["mia"]
    cancel.clear()
    with pytest.raises(Cancelled):
        series.run(series.tiny_config(), cancel=cancel,
                   progress=lambda *a, **k: cancel.set())


def test_the_cli_runs_a_series(capsys):
    from core.__main__ import main

    tiny = series.tiny_config()
    assert main(["checkpoint-audit", "--checkpoints", *tiny.checkpoints, "--reference",
                 tiny.reference, "--members", tiny.members, "--attacks", "mia", "--device",
                 "cpu", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [p["step"] for p in printed["points"]] == [100, 200]
    assert all(p["headline"]["mia"]["best_auroc"] is not None for p in printed["points"])
    assert printed["notes"] == []   # every file given was read
    assert Store().runs("audit-series")[0].status == "done"


def test_a_series_whose_every_checkpoint_fails_fails_naming_each_error(tmp_path, capsys):
    """Not a ``done`` series of failed points: the run fails and the CLI exits 2, naming each
    checkpoint's error (its audit, a run of its own, keeps the traceback)."""
    from core.__main__ import main

    tiny = series.tiny_config()
    broken = [_checkpoint(tmp_path / f"checkpoint-{step}") for step in (100, 200)]
    assert main(["audit-series", "--checkpoints", *broken, "--reference", tiny.reference,
                 "--members", tiny.members, "--users", tiny.members, "--attacks", "mia",
                 "--device", "cpu"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: the audit of every checkpoint failed: step 100 (")
    assert "; step 200 (" in error and error.count("no *.safetensors weights") == 2
    stored = Store().runs("audit-series")[0]
    assert stored.status == "failed" and stored.error == error.removeprefix("error: ")
    assert [r.status for r in Store().runs("audit")] == ["failed", "failed"]


def test_the_page_tab_takes_loaded_checkpoints_and_draws_a_series(demo_home, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_CONFIRM_MINUTES", "1e9")   # Run needs no tick on a busy CPU
    at = page_app("app_pages/audit.py").run()
    assert not at.exception and not at.error
    assert [t.label for t in at.tabs] == ["One model", "Checkpoint series"]
    picker = at.multiselect(key="audit-series-checkpoints")
    assert {"demo:base", "demo:updated"} <= set(picker.options)
    assert at.button(key="audit-series-run").disabled
    picker.set_value(["demo:updated", "demo:base"]).run()
    assert not at.exception and not at.error
    assert not at.button(key="audit-series-run").disabled
    assert at.text_input(key="audit-series-members-path").value == "demo:membership"
    tiny = series.tiny_config()
    record_run(series.SPEC, tiny, series.run(tiny))
    at.run()
    assert not at.exception and not at.error
    table = at.get_by_key("audit-series-result-table").dataframe[0].value
    assert list(table["training step"]) == [100, 200]
    assert "mia: best membership AUROC" in table.columns
    labels = [b.label for b in at.get("download_button")]
    assert {"Download the report (HTML)", "Download the table (CSV)"} <= set(labels)


def test_an_attack_that_fails_on_one_checkpoint_is_recorded_and_the_series_goes_on(monkeypatch,
                                                                                     tmp_path):
    from core.attacks.membership import mia

    tiny = series.tiny_config()
    real = mia.SPEC.run

    def broken_on_the_first(config, **kwargs):
        if config.model == tiny.checkpoints[0]:
            raise ValueError("no auroc")
        return real(config, **kwargs)

    monkeypatch.setattr(mia, "SPEC", dataclasses.replace(mia.SPEC, run=broken_on_the_first))
    result = series.run(dataclasses.replace(tiny, out=str(tmp_path / "series.html")))
    first, second = result.points   # its only attack failed: that checkpoint's audit failed
    assert (first.status, first.headline) == ("failed", {})
    assert "every attack of the audit failed: mia: ValueError: no auroc" in first.error
    assert second.status == "done" and second.headline["mia"]["best_auroc"] is not None
    assert "ValueError: no auroc" in (tmp_path / "series.html").read_text()


def test_a_checkpoint_whose_audit_fails_is_a_failed_point_and_the_next_is_audited(monkeypatch):
    from core.audit import audit

    tiny = series.tiny_config()
    collect = audit.collect

    def broken_on_the_first(models, data, started):
        if tiny.checkpoints[0] in models:
            raise RuntimeError("a bug\nin the provenance")
        return collect(models, data, started)

    monkeypatch.setattr(audit, "collect", broken_on_the_first)
    result = run_now(series.SPEC, tiny, progress=no_progress)
    first, second = result.points
    assert (first.status, first.error) == ("failed", "RuntimeError: a bug in the provenance")
    stored = Store().get(first.audit_run_id)   # its run keeps the traceback
    assert stored.status == "failed" and "Traceback" in stored.error
    assert second.status == "done" and second.headline["mia"]["best_auroc"] is not None
    assert not result.stopped_early and Store().runs("audit-series")[0].status == "done"
    assert "Not audited: RuntimeError: a bug in the provenance" in series.render_series_report(result)
