"""The audit: the chosen attacks run in order and are recorded, a cancel in the second keeps the
first, the report holds every section and no external resource, the same audit gives the same
report, and the page draws a recorded audit. (A report opens in Chromium, offline, with its
figures: tests/browser/test_browser_pages.py.)"""

import dataclasses
import json
import re
import threading

import plotly.offline
import pytest

from core.audit import audit, plan
from core.audit.report import render_report, stored_results
from core.errors import UserError
from core.jobs import Store
from pagetest import page_app, record_run


@pytest.fixture
def demo_audit(demo_home):
    return audit.AuditConfig(model="demo:updated", reference="demo:base",
                             corpus="demo:private_train", members="demo:membership",
                             attacks=("diffrank", "mia"), device="cpu")


def test_the_chosen_attacks_run_in_order_each_recorded(demo_audit, tmp_path):
    config = dataclasses.replace(demo_audit, sigma=1.0, q=0.01, steps=1000,
                                 out=str(tmp_path / "report.html"))
    result = audit.run(config)
    assert [e.attack for e in result.entries] == ["diffrank", "mia"]
    assert all(e.status == "done" and e.verdict for e in result.entries)
    runs = {r.id: r for r in Store().runs()}
    assert [runs[e.run_id].kind for e in result.entries] == ["diffrank", "mia"]
    assert all(runs[e.run_id].status == "done" for e in result.entries)
    diffrank = runs[result.entries[0].run_id]
    assert diffrank.params["phrase"]    # the demo's settings come with the demo's models
    text = (tmp_path / "report.html").read_text()
    for section in ("summary", "diffrank", "mia", "dp", "provenance"):
        assert f"<section id='{section}'>" in text
    assert "ε = " in text and "SHA-256" in text and "python -m core audit" in text
    ours = text.replace(plotly.offline.get_plotlyjs(), "")   # the library's own strings aside
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", ours)
    assert "<link" not in ours and "<script src" not in ours


def test_a_cancel_in_the_second_attack_keeps_the_first(demo_audit):
    cancel = threading.Event()

    def progress(fraction, message="", partial=None):
        if message.startswith("mia"):
            cancel.set()

    result = audit.run(demo_audit, progress=progress, cancel=cancel)
    assert result.stopped_early and result.entries[0].status == "done"
    assert [e.attack for e in result.entries][:1] == ["diffrank"]
    assert "diffrank" in stored_results(result)


def test_the_same_audit_gives_the_same_report(demo_audit):
    config = dataclasses.replace(demo_audit, attacks=("mia",))
    first, second = audit.run(config), audit.run(config)
    assert [e.verdict for e in first.entries] == [e.verdict for e in second.entries]

    def stable(result) -> str:   # the provenance's clock and timings aside
        text = render_report(result, stored_results(result))
        return re.sub(r"started [^;<]*|\d+(\.\d+)? s\b", "", text.split("id='provenance'")[0])

    assert stable(first) == stable(second)


def test_attacks_need_their_inputs():
    with pytest.raises(UserError, match="user-inference needs model, reference, users"):
        audit.AuditConfig(model="m", reference="r", attacks=("user-inference",))
    assert audit.AuditConfig(model="m").chosen() == ["extraction"]


def test_settings_change_one_attack_and_are_checked_before_the_run(demo_audit):
    config = dataclasses.replace(demo_audit, settings=("mia.k=0.5", "diffrank.beam=64"))
    assert plan.attack_config("mia", config).k == 0.5
    assert plan.attack_config("diffrank", config).beam == 64
    assert plan.attack_config("diffrank", demo_audit).phrase   # the demo preset's setting
    for settings, message in ((("mia.k=2",), "mia: k"), (("mia.kk=1",), "no setting 'kk'"),
                              (("extraction.n_samples=5",), "does not run"),
                              (("mia.data=x",), "no setting 'data'")):
        with pytest.raises(UserError, match=message):
            dataclasses.replace(demo_audit, settings=settings)
    assert plan.available(audit.AuditConfig(model="m", reference="r")) == ["extraction", "diffrank"]


def test_the_page_draws_a_recorded_audit_and_offers_its_report(demo_audit):
    result = audit.run(dataclasses.replace(demo_audit, attacks=("mia",)))
    at = page_app("app_pages/audit.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="audit-model").value == "demo:updated"
    assert at.text_input(key="audit-members-path").value == "demo:membership"
    planned = [e.label for e in at.expander]
    assert planned[0].startswith("extraction: ") and any(p.startswith("mia: ") for p in planned)
    at.text_area(key="audit-settings").set_value("mia.k=3").run()
    assert "mia: k" in at.error[0].value and at.button(key="audit-run").disabled
    at.text_area(key="audit-settings").set_value("").run()
    record_run(audit.SPEC, demo_audit, result)
    at.run()
    assert not at.exception and not at.error
    verdicts = at.get_by_key("audit-result-verdicts").dataframe[0].value
    assert list(verdicts["attack"]) == [e.title for e in result.entries]
    assert "Download the report (HTML)" in [b.label for b in at.get("download_button")]


def test_the_extraction_verdict_names_the_longest_memorised_passages_once():
    from types import SimpleNamespace as C

    found = [C(memorized=True, span="card number is 4929 1234.", span_tokens=12, k_eidetic=150),
             C(memorized=True, span="number is 4929 1234.", span_tokens=9, k_eidetic=150),
             C(memorized=True, span="Zealous penguins juggle.", span_tokens=8, k_eidetic=60),
             C(memorized=False, span=None, span_tokens=0, k_eidetic=0)]
    result = C(candidates=found, corpus="train.txt", min_span_tokens=8, generated={"top-n": 4})
    verdict = plan.steps()["extraction"].verdict(result)
    assert "3 extracted candidates" in verdict and "2 distinct passages were extracted" in verdict
    assert verdict.index("card number is 4929 1234.") < verdict.index("Zealous penguins")
    assert "12 tokens, in 150 training documents" in verdict
    assert "memorised" in plan.steps()["extraction"].verdict(C(**{**vars(result),
                                                               "candidates": found[:1]}))


def test_the_reports_extraction_table_shows_each_memorised_passage_once():
    from types import SimpleNamespace as C

    from core.attacks.extraction import audit_hooks

    secret = "card number is 4929 1234."
    found = [C(memorized=True, span=secret, span_tokens=12, k_eidetic=150, strategy=s,
               text=f"{secret} sample {i}", public=None)
             for i, s in enumerate(("top-n", "top-n", "prefix"))]
    found.append(C(memorized=True, span="Zealous penguins juggle.", span_tokens=8, k_eidetic=60,
                   strategy="top-n", text="Zealous penguins juggle.", public=None))
    html = audit_hooks.section(C(candidates=found, precision={}, extractability=[],
                                 extractability_scheme="", pii=[]))
    assert html.count(secret) == 2   # the span once, and one sample holding it
    assert "<td>3</td><td>prefix, top-n</td>" in html and "Zealous penguins juggle." in html


def test_audit_on_the_cpu_keeps_every_attack_on_the_cpu(demo_home, monkeypatch, capsys):
    """``audit --device cpu`` on a machine that seems to have a GPU: every sub-run's recorded
    config says cpu, and every model loaded is on the CPU (diffrank first: nothing else has
    loaded the models on the CPU for it)."""
    import torch

    from core.__main__ import main
    from core.models import loaded_models

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)   # "auto" would pick cuda
    # the demo's corpus holds no natural identifier: nid-audit would be "Not run"
    attacks = ["diffrank", *(n for n in plan.steps() if n not in ("diffrank", "nid-audit"))]
    small = ("extraction.n_samples=8", "extraction.tokens=16", "diffrank.beam=8",
             "diffrank.rows=8", "diffrank.sample_texts=4", "diffrank.sample_tokens=16",
             "lazy-risk.n_generated=8", "lazy-risk.generated_tokens=16", "mia.bootstrap=0")
    assert main(["audit", "--model", "demo:updated", "--reference", "demo:base",
                 "--corpus", "demo:private_train", "--users", "demo:user_samples",
                 "--members", "demo:membership", "--device", "cpu", "--json",
                 "--attacks", *attacks, "--set", *small]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert [e["attack"] for e in entries] == attacks
    assert all(e["status"] == "done" for e in entries), [e["error"] for e in entries]
    runs = {r.id: r for r in Store().runs()}
    assert {runs[e["run_id"]].kind: runs[e["run_id"]].params.get("device")
            for e in entries} == dict.fromkeys(attacks, "cpu")
    assert {lm.device.type for lm in loaded_models()} == {"cpu"}
    assert main(["audit", "--model", "demo:updated", "--members", "demo:membership",
                 "--device", "cpu", "--set", "mia.device=cuda", "--no-record"]) == 2
    assert "the audit's device (--device) is every attack's" in capsys.readouterr().err


def test_an_attack_that_fails_is_recorded_and_the_audit_goes_on(monkeypatch, tmp_path, capsys):
    import json

    import torch

    from core.__main__ import main
    from core.attacks.extraction import spec as extraction

    def out_of_memory(config, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory.\nTried to allocate 2.00 GiB")

    monkeypatch.setattr(extraction, "SPEC", dataclasses.replace(extraction.SPEC, run=out_of_memory))
    tiny, report = audit.tiny_config(), tmp_path / "report.html"
    assert main(["audit", "--model", tiny.model, "--reference", tiny.reference, "--members",
                 tiny.members, "--corpus", tiny.corpus, "--attacks", "extraction", "mia",
                 "--device", "cpu", "--out", str(report), "--json"]) == 0
    failed, done = json.loads(capsys.readouterr().out)["entries"]
    why = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert (failed["attack"], failed["status"], failed["error"]) == ("extraction", "failed", why)
    assert failed["verdict"] == f"Failed: {why}" and failed["run_id"] is not None
    assert Store().get(failed["run_id"]).status == "failed"   # its own run says so too
    assert (done["attack"], done["status"]) == ("mia", "done") and "AUROC" in done["verdict"]
    text = report.read_text()
    assert "<section id='mia'>" in text and f"Failed: {why}" in text
    assert Store().runs("audit")[0].status == "done"


def test_a_cancel_stops_the_audit_and_is_not_a_failure(monkeypatch):
    from core.attacks.extraction import spec as extraction
    from core.runtime import Cancelled

    cancel = threading.Event()

    def cancelled(config, *, progress, cancel):
        cancel.set()
        raise Cancelled()

    monkeypatch.setattr(extraction, "SPEC", dataclasses.replace(extraction.SPEC, run=cancelled))
    config = dataclasses.replace(audit.tiny_config(), attacks=("extraction", "mia"))
    with pytest.raises(Cancelled):   # in the first attack: nothing to report
        audit.run(config, cancel=cancel)
    assert [r.status for r in Store().runs("extraction")] == ["cancelled"]
    assert not Store().runs("mia")


def test_inputs_no_chosen_attack_reads_are_named_in_a_note(tmp_path, capsys):
    """``--users`` and ``--corpus`` given to an audit of membership inference alone: the result,
    the CLI's output and the report say they were not used."""
    import json

    from core.__main__ import main

    tiny, report = audit.tiny_config(), tmp_path / "report.html"
    assert main(["audit", "--model", tiny.model, "--reference", tiny.reference, "--members",
                 tiny.members, "--corpus", tiny.corpus, "--users", tiny.members, "--attacks",
                 "mia", "--device", "cpu", "--out", str(report), "--json"]) == 0
    note = "not used: corpus, users (no chosen attack reads them)"
    assert json.loads(capsys.readouterr().out)["notes"] == [note]
    assert f"Note: {note}" in report.read_text()
    read_all = dataclasses.replace(tiny, corpus="", attacks=("mia",))
    assert plan.unused_inputs(read_all) == []
    users_only = dataclasses.replace(tiny, corpus="", users=tiny.members)
    assert plan.unused_inputs(users_only) == ["not used: users (no chosen attack reads it)"]


def test_an_audit_whose_every_attack_fails_fails_and_names_each_error(monkeypatch, capsys):
    from core.__main__ import main
    from core.attacks.extraction import spec as extraction

    def broken(config, **kwargs):
        raise RuntimeError("a bug in the attack")

    monkeypatch.setattr(extraction, "SPEC", dataclasses.replace(extraction.SPEC, run=broken))
    tiny = audit.tiny_config()
    assert main(["audit", "--model", tiny.model, "--reference", tiny.reference, "--corpus",
                 tiny.corpus, "--attacks", "extraction", "--device", "cpu"]) == 2
    assert ("every attack of the audit failed: extraction: RuntimeError: a bug in the attack"
            in capsys.readouterr().err)
    assert Store().runs("audit")[0].status == "failed"


def _tiny_audit(capsys, attacks: list[str], report) -> dict:
    """The tiny audit of ``attacks`` from the CLI, with its report: its JSON result."""
    from core.__main__ import main

    tiny = audit.tiny_config()
    assert main(["audit", "--model", tiny.model, "--reference", tiny.reference, "--members",
                 tiny.members, "--corpus", tiny.corpus, "--attacks", *attacks, "--device", "cpu",
                 "--out", str(report), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_attack_that_does_not_apply_is_marked_so_not_as_failed(tmp_path, capsys):
    """Issue #45: the PII probe of a corpus without PII does not apply (``NotApplicable``): the
    CLI's result, the attack's stored run, the report and the Runs page say so, with why."""
    report = tmp_path / "report.html"
    audited = _tiny_audit(capsys, ["pii-probe", "mia"], report)
    skipped, done = audited["entries"]
    why = "no data subject with PII of the kinds"
    assert (skipped["attack"], skipped["status"]) == ("pii-probe", "did not apply")
    assert skipped["error"].startswith(why)
    assert skipped["verdict"].startswith(f"Did not apply: {why}")
    assert Store().get(skipped["run_id"]).status == "did not apply"
    assert done["status"] == "done"
    text = report.read_text()
    assert "failed" not in text.split("<section id='summary'>")[1].split("</section>")[0]
    assert f"Did not apply: {why}" in text and "<td>did not apply</td>" in text
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(Store().runs("audit")[0].id).run()
    assert not at.exception and not at.error
    verdicts = at.get_by_key(f"run-{Store().runs('audit')[0].id}-verdicts").dataframe[0].value
    assert list(verdicts["status"]) == ["did not apply", "done"]
    at.selectbox(key="run").set_value(skipped["run_id"]).run()
    assert not at.error and any(why in i.value and "did not apply" in i.value for i in at.info)


def test_a_membership_score_below_chance_is_flagged_in_the_verdict_and_report(
        monkeypatch, tmp_path, capsys):
    """Issue #45: an AUROC whose interval lies below 0.5 is no evidence of privacy: the audit's
    verdict (the CLI's and the report's) says so."""
    from core.attacks.membership import mia
    from mia_results import mia_result

    monkeypatch.setattr(mia, "SPEC", dataclasses.replace(
        mia.SPEC, run=lambda config, **kwargs: mia_result(inverted=True)))
    report = tmp_path / "report.html"
    [entry] = _tiny_audit(capsys, ["mia"], report)["entries"]
    assert "below chance" in entry["verdict"] and "not evidence of privacy" in entry["verdict"]
    section = report.read_text().split("<section id='mia'>")[1].split("</section>")[0]
    assert "ranks non-members above members" in section and "not evidence of privacy" in section


def test_the_reports_provenance_says_when_the_audit_started_and_finished(
        monkeypatch, tmp_path, capsys):
    """Issue #45: "started" gave the time it finished (the provenance was collected last)."""
    import datetime
    import time

    from core.attacks.membership import mia

    real = mia.SPEC.run

    def slow(config, **kwargs):   # an attack of a few seconds, as a real one takes
        time.sleep(1.5)
        return real(config, **kwargs)

    monkeypatch.setattr(mia, "SPEC", dataclasses.replace(mia.SPEC, run=slow))
    report = tmp_path / "report.html"
    _tiny_audit(capsys, ["mia"], report)
    text = report.read_text()
    started, finished = (datetime.datetime.strptime(
        re.search(rf"{word} (\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d)", text).group(1),
        "%Y-%m-%d %H:%M:%S") for word in ("started", "finished"))
    [attack] = Store().runs("mia")
    assert started <= datetime.datetime.fromtimestamp(attack.started)
    assert finished >= datetime.datetime.fromtimestamp(attack.finished).replace(microsecond=0)
