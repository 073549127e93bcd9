"""The audit: the chosen attacks run in order and are recorded, a cancel in the second keeps the
first, the report holds every section and no external resource, the same audit gives the same
report, the page draws a recorded audit, and the report opens in Chromium with its figures."""

import dataclasses
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


def test_the_report_opens_in_chromium_with_its_figures(demo_audit, tmp_path):
    from playwright.sync_api import sync_playwright

    from appserver import CHROMIUM, CHROMIUM_ARGS

    path = tmp_path / "report.html"
    audit.run(dataclasses.replace(demo_audit, attacks=("mia",), out=str(path)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 2      # the ROC, linear and log-log
        assert page.locator("section#summary td").first.inner_text()
        assert all(url.startswith(("file:", "data:", "blob:")) for url in requests), requests
        browser.close()


def test_the_extraction_verdict_names_the_longest_memorised_passages_once():
    from types import SimpleNamespace as C

    found = [C(memorized=True, span="card number is 4929 1234.", span_tokens=12, k_eidetic=150),
             C(memorized=True, span="number is 4929 1234.", span_tokens=9, k_eidetic=150),
             C(memorized=True, span="Zealous penguins juggle.", span_tokens=8, k_eidetic=60),
             C(memorized=False, span=None, span_tokens=0, k_eidetic=0)]
    result = C(candidates=found, corpus="train.txt", min_span_tokens=8, generated={"top-n": 4})
    verdict = plan.STEPS["extraction"].verdict(result)
    assert "3 extracted candidates" in verdict and "2 distinct passages were extracted" in verdict
    assert verdict.index("card number is 4929 1234.") < verdict.index("Zealous penguins")
    assert "12 tokens, in 150 training documents" in verdict
    assert "memorised" in plan.STEPS["extraction"].verdict(C(**{**vars(result),
                                                               "candidates": found[:1]}))


def test_the_reports_extraction_table_shows_each_memorised_passage_once():
    from types import SimpleNamespace as C

    from core.audit import sections

    secret = "card number is 4929 1234."
    found = [C(memorized=True, span=secret, span_tokens=12, k_eidetic=150, strategy=s,
               text=f"{secret} sample {i}") for i, s in enumerate(("top-n", "top-n", "prefix"))]
    found.append(C(memorized=True, span="Zealous penguins juggle.", span_tokens=8, k_eidetic=60,
                   strategy="top-n", text="Zealous penguins juggle."))
    html = sections.extraction(C(candidates=found, precision={}))
    assert html.count(secret) == 2   # the span once, and one sample holding it
    assert "<td>3</td><td>prefix, top-n</td>" in html and "Zealous penguins juggle." in html
