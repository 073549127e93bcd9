"""The extraction and lazy-sampling risk pages: demo defaults, a small run as a job, the ranked
table with hand marks that move the precision, the heat map, Figure 5 / Table 1, bad input."""

import json
import time

import pytest

from core.demo import scenario
from core.jobs import Store
from pagetest import page_app, wait_for_run


def test_extraction_page_runs_ranks_and_takes_hand_marks(demo_home):
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="ex-target").value == "demo:updated"
    assert at.selectbox(key="ex-reference").value == "demo:base"
    assert at.text_input(key="ex-corpus-path").value == "demo:private_train"
    assert at.number_input(key="ex-min-span").value == 8 and at.number_input(key="ex-n").value == 1000
    at.multiselect(key="ex-strategies").set_value(["top-n"])
    at.number_input(key="ex-n").set_value(32)
    at.number_input(key="ex-tokens").set_value(40)
    at.number_input(key="ex-top-k").set_value(10)
    at.button(key="ex-run").click().run()
    run = wait_for_run("extraction")
    assert run.status == "done", run.error
    assert run.params["strategies"] == "top-n" and run.params["corpus"] == "demo:private_train"
    at.run()
    assert not at.exception and not at.error
    planted = at.dataframe[0].value
    secret = scenario.load_manifest()["secret"]["sentence"]
    found = planted.set_index("planted in the demo")["found verbatim in"][secret]
    assert "top-n/" in found

    table = at.dataframe[1].value     # precision: metrics x strategies
    assert list(table.columns) == ["top-n"]
    assert list(table.index) == ["perplexity", "reference", "zlib", "lowercase", "window"]
    before = table.loc["perplexity", "top-n"]
    ranked = at.dataframe(key="ex-editor-top-n-perplexity").value   # the editable ranking
    assert list(ranked["rank"]) == list(range(1, len(ranked) + 1)) and "memorized" in ranked
    assert at.get("plotly_chart")  # the heat map
    assert at.get("download_button")

    # flipping the mark of the first candidate by hand moves the precision of its ranking
    ranking = run.result["rankings"]["top-n"]["perplexity"]
    first = next(c for c in run.result["candidates"] if c["id"] == ranking[0])
    key = f"ex-marks-{run.result['model']}-{run.result['seconds']}"
    at.session_state[key] = {ranking[0]: not first["memorized"]}
    at.run()
    after = at.dataframe[1].value.loc["perplexity", "top-n"]
    step = -1 if first["memorized"] else 1
    assert after == pytest.approx(before + step / len(ranking))
    assert any("1 marked by hand" in c.value for c in at.caption)


def test_extraction_page_turns_bad_input_into_errors(demo_home):
    at = page_app("app_pages/extraction.py").run()
    at.multiselect(key="ex-strategies").set_value([]).run()
    assert not at.exception
    assert "unknown strategy" in at.error[0].value and at.button(key="ex-run").disabled
    at.multiselect(key="ex-strategies").set_value(["prefix"]).run()
    at.text_input(key="ex-prefixes-path").set_value("").run()
    assert "prefix strategy needs a file" in at.error[0].value


def test_lazy_risk_page_draws_figure_5_and_table_1(demo_home):
    at = page_app("app_pages/lazy_risk.py").run()
    assert not at.exception and not at.error
    assert at.text_input(key="lr-train-path").value == "demo:private_train"
    at.number_input(key="lr-generated").set_value(8)
    at.button(key="lr-run").click().run()
    assert wait_for_run("lazy-risk").status == "done"
    at.run()
    assert not at.exception and not at.error
    assert at.metric[0].label.startswith("Planted secret") and at.metric[0].value.startswith("1 of")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles[0].startswith("Calibrated loss") and "log10 probability" in titles[1]
    table = at.dataframe[0].value
    assert list(table["rank"])[:3] == [1, 2, 3] and table["text"].iloc[0] == scenario.load_manifest()["secret"]["sentence"]
    at.text_input(key="lr-train-path").set_value("/no/such/file.txt").run()
    at.button(key="lr-run").click().run()
    run = Store().runs("lazy-risk")[0]
    deadline = time.monotonic() + 30
    while Store().get(run.id).active and time.monotonic() < deadline:
        time.sleep(0.05)
    at.run()
    assert not at.exception
    assert "no such file" in at.error[0].value
