"""The extraction and lazy-sampling risk pages: demo defaults from the preset, a recorded run
drawn (the ranked table with hand marks that move the precision, the heat map, Figure 5 /
Table 1), runs started from the page, bad input."""

import json

import pytest

from core import sources
from core.attacks.extraction import spec as ex
from core.attacks.lazy_risk import spec as lr
from core.demo import scenario
from core.demo.config import SECRET_PROMPT
from core.jobs import Store, load_result, run_now
from core.runtime import no_progress
from pagetest import page_app, wait_for_run


def _layout(at, key: str) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return json.loads(chart.proto.spec)["layout"]


def test_extraction_page_shows_a_recorded_run_and_takes_hand_marks(demo_home):
    demo = sources.preset(ex.SPEC.name, "demo")
    run_now(ex.SPEC, ex.ExtractionConfig(**demo | dict(strategies=("top-n",), n_samples=32,
                                                       tokens=40, top_k=10)),
            progress=no_progress)
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="ex-model").value == "demo:updated"
    assert at.selectbox(key="ex-reference").value == "demo:base"
    assert at.text_input(key="ex-corpus-path").value == "demo:private_train"
    assert at.number_input(key="ex-min_span_tokens").value == 8
    assert at.number_input(key="ex-n_samples").value == 1000
    assert at.multiselect(key="ex-strategies").value == ["top-n", "temperature", "prefix"]
    run = Store().runs("extraction")[0]
    assert run.params["strategies"] == ["top-n"] and run.params["corpus"] == "demo:private_train"
    tracked = at.get_by_key("ex-tracked").dataframe[0].value   # the demo preset tracks its plants
    secret = scenario.load_manifest().secret.sentence
    found = tracked.set_index("tracked phrase")["found verbatim in"][secret]
    assert "top-n/" in found

    table = at.get_by_key("ex-precision").dataframe[0].value     # precision: metrics x strategies
    assert list(table.columns) == ["top-n"]
    assert list(table.index) == ["perplexity", "reference", "zlib", "lowercase", "window"]
    before = table.loc["perplexity", "top-n"]
    ranked = at.dataframe(key="ex-editor-top-n-perplexity").value   # the editable ranking
    assert list(ranked["rank"]) == list(range(1, len(ranked) + 1)) and "memorized" in ranked
    heat = _layout(at, "ex-heat-map")   # the heat map, tall enough to read
    assert heat["height"] - heat["margin"]["t"] - heat["margin"]["b"] >= 80
    assert at.get("download_button")

    # flipping the mark of the first candidate by hand moves the precision of its ranking
    result = load_result(run)
    ranking = result.rankings["top-n"]["perplexity"]
    first = next(c for c in result.candidates if c.id == ranking[0])
    at.session_state[f"ex-marks-{result.model}-{result.seconds}"] = {ranking[0]: not first.memorized}
    at.run()
    after = at.get_by_key("ex-precision").dataframe[0].value.loc["perplexity", "top-n"]
    step = -1 if first.memorized else 1
    assert after == pytest.approx(before + step / len(ranking))
    assert any("1 marked by hand" in c.value for c in at.caption)


def test_extraction_page_turns_bad_input_into_errors(demo_home):
    at = page_app("app_pages/extraction.py").run()
    at.multiselect(key="ex-strategies").set_value([]).run()
    assert not at.exception
    assert "at least one generation strategy" in at.error[0].value
    assert at.button(key="ex-run").disabled
    at.multiselect(key="ex-strategies").set_value(["prefix"]).run()
    at.text_input(key="ex-prefixes-path").set_value("").run()
    assert "prefix strategy needs a file" in at.error[0].value
    # a server file outside the lab's folders is refused at the form, before it is looked at
    at.multiselect(key="ex-strategies").set_value(["top-n"])
    at.text_input(key="ex-corpus-path").set_value("/etc/hostname.txt").run()
    assert not at.exception and at.button(key="ex-run").disabled
    assert "reads files only from its own folder" in at.error[0].value
    assert "upload the file instead" in at.error[0].value
    # a valid form starts the run with the form's values
    at.text_input(key="ex-corpus-path").set_value("demo:private_train")
    at.number_input(key="ex-n_samples").set_value(2).run()
    at.button(key="ex-run").click().run()
    run = wait_for_run("extraction")
    assert run.params["strategies"] == ["top-n"] and run.params["reference"] == "demo:base"


def test_lazy_risk_page_draws_figure_5_and_table_1(demo_home):
    demo = sources.preset(lr.SPEC.name, "demo")
    run_now(lr.SPEC, lr.LazyRiskConfig(**demo | {"n_generated": 8}), progress=no_progress)
    at = page_app("app_pages/lazy_risk.py").run()
    assert not at.exception and not at.error
    assert at.text_input(key="lr-train-path").value == "demo:private_train"
    assert at.number_input(key="lr-n_generated").value == 200
    tracked = at.get_by_key("lr-tracked").dataframe[0].value.set_index("tracked")
    assert tracked.loc[SECRET_PROMPT, "rank"] == 1  # the planted secret, found by its prompt
    assert _layout(at, "lr-histogram")["title"]["text"].startswith("Calibrated loss")
    assert "log10 probability" in _layout(at, "lr-scatter")["title"]["text"]
    table = at.get_by_key("lr-table-1").dataframe[0].value
    assert list(table["rank"])[:3] == [1, 2, 3]
    assert table["text"].iloc[0] == scenario.load_manifest().secret.sentence
    # the sentences to track: one a line (they hold commas), the demo's planted ones to start
    assert at.text_area(key="lr-track").value.splitlines() == list(demo["track"])
    assert at.text_input(key="lr-domain_sample-path").value == ""
    assert at.number_input(key="lr-domain_steps").value == 0   # sized for the device when it trains
    at.text_area(key="lr-track").set_value("My secret, with a comma\n\n  and another one ")
    at.text_input(key="lr-train-path").set_value(str(demo_home / "no-such-file.txt")).run()
    assert not at.exception and at.button(key="lr-run").disabled   # refused at the form
    assert "no such file" in at.error[0].value
    at.text_input(key="lr-train-path").set_value("/etc/hostname.txt").run()   # refused unread
    assert at.button(key="lr-run").disabled and "only from its own folder" in at.error[0].value
    at.text_input(key="lr-train-path").set_value("demo:private_train")
    at.number_input(key="lr-n_generated").set_value(8).run()
    at.button(key="lr-run").click().run()
    run = wait_for_run("lazy-risk", count=2)
    assert run.params["track"] == ["My secret, with a comma", "and another one"]


def test_a_candidate_is_shown_whole_with_its_verbatim_span_highlighted():
    from ui.render.extraction import highlighted

    shown = highlighted("Say *this* [link](x)\nthen John Doe's card 42.", "John Doe's card 42")
    assert ":orange-background[John Doe's card 42]" in shown
    assert "\\*this\\*" in shown and "\\[link\\]" in shown and "  \n> then" in shown
    assert ":orange-background" not in highlighted("no span here", None)


def test_a_data_field_says_what_it_found_in_a_fine_tuners_rows(demo_home):
    rows = [{"messages": [{"role": "user", "content": f"hi {i}"},
                          {"role": "assistant", "content": "hello"}]} for i in range(3)]
    path = demo_home / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    at = page_app("app_pages/lazy_risk.py").run()
    at.text_area(key="lr-chat_template").set_value(   # the demo's model has none
        "{% for m in messages %}{{ m.content }}\n{% endfor %}").run()
    at.text_input(key="lr-train-path").set_value(str(path)).run()
    assert not at.exception and not at.button(key="lr-run").disabled
    assert any(c.value.startswith("3 messages rows (TRL's dataset type)")
               and "the assistant's turns" in c.value for c in at.caption)
    assert at.radio(key="lr-mask").value == "auto"
    (demo_home / "lines.txt").write_text("one\ntwo\n", encoding="utf-8")
    at.text_input(key="lr-train-path").set_value(str(demo_home / "lines.txt")).run()
    assert any(c.value == "2 plain texts, every token scored" for c in at.caption)
