"""The differential rank page: demo defaults, a background search, tables and charts, swap, errors."""

import json

from demo_fixtures import install_demo
from pagetest import page_app, wait_for_run


def _chart_titles(at):
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_demo_search_shows_sequences_phrase_charts_and_swap(tiny_demo, lab_home):
    install_demo(tiny_demo, lab_home)
    at = page_app("app_pages/diffrank.py").run()
    assert not at.exception and not at.error
    assert at.selectbox[0].value == "demo:base" and at.selectbox[1].value == "demo:updated"
    canary = "Zealous penguins quietly juggle turquoise kettles."
    assert at.text_input[0].value == canary  # the demo canary, pre-filled
    at.number_input[0].set_value(2)
    at.select_slider[0].set_value(16)
    at.button[0].click().run()
    assert not at.exception
    run = wait_for_run("diffrank", count=1, timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table.columns) == ["rank", "phrase", "ds", "rds", "group"] and len(table) == 8
    assert list(table["rank"]) == list(range(8)) and (table["ds"].diff().dropna() <= 1e-6).all()
    assert any(canary.startswith(p) for p in table["phrase"][:5])  # the update exposes the canary
    titles = _chart_titles(at)
    assert titles[0].startswith("DS token by token") and titles[1].startswith("Prefix knowledge")
    assert at.metric[2].value in ("≥ 0", "≥ 1")  # only the secret's first tokens may beat it
    assert int(at.metric[3].value) >= int(at.metric[2].value[2:])  # 511² sequences: counted

    at.toggle[0].set_value(True)
    at.button[0].click().run()
    run = wait_for_run("diffrank", count=2, timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception
    assert "(swapped)" in at.caption[0].value
    assert float(at.metric[0].value) < 0  # the swap asks what was removed: the canary's DS flips


def test_bad_settings_show_an_error_and_disable_the_search(tiny_demo, lab_home):
    install_demo(tiny_demo, lab_home)
    at = page_app("app_pages/diffrank.py").run()
    at.select_slider[0].set_value(8)
    at.number_input[1].set_value(16).run()
    assert not at.exception
    assert "groups" in at.error[0].value and at.button[0].disabled
