"""The differential rank page: demo defaults, a recorded search drawn (table, charts, the phrase's
rank in words, warnings), a swapped search started from the page, errors."""

import dataclasses
import json

from core import sources
from core.attacks.diffrank.config import DiffRankConfig
from core.attacks.diffrank.spec import SPEC
from core.jobs import Store, run_now
from core.runtime import no_progress
from pagetest import page_app, wait_for_run
from ui.render.diffrank import STANDING
from ui.text import plain

CANARY = "Zealous penguins quietly juggle turquoise kettles."


def _layout(at, key: str) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return json.loads(chart.proto.spec)["layout"]


def _chart_title(at, key: str) -> str:
    return _layout(at, key)["title"]["text"]


def _metric(at, label: str) -> str:
    return next(m for m in at.metric if m.label.startswith(label)).value


def test_demo_search_shows_sequences_phrase_rank_charts_warnings_and_swap(demo_home):
    demo = sources.preset(SPEC.name, "demo")
    recorded = run_now(SPEC, DiffRankConfig(**demo | {"length": 2, "beam": 16, "rows": 1000,
                                                      "sample_texts": 4, "sample_tokens": 16}),
                       progress=no_progress)
    at = page_app("app_pages/diffrank.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="diffrank-before").value == "demo:base"
    assert at.selectbox(key="diffrank-after").value == "demo:updated"
    assert at.text_input(key="diffrank-phrase").value == CANARY == demo["phrase"]  # pre-filled
    assert at.selectbox(key="diffrank-strategy").value == "beam+windows"
    table = at.get_by_key("diffrank-sequences").dataframe[0].value
    assert list(table.columns) == ["rank", "phrase", "ds", "rds", "found_by", "group"]
    assert len(table) == len(recorded.rows) and set(table["found_by"]) == {"beam", "windows"}
    assert list(table["rank"]) == list(range(len(table)))
    assert (table["ds"].diff().dropna() <= 1e-6).all()
    assert any(CANARY.startswith(p) for p in table["phrase"][:5])  # the update exposes the canary
    assert _chart_title(at, "diffrank-tokens").startswith("DS token by token")
    assert _chart_title(at, "diffrank-prefix").startswith("Prefix knowledge")
    layout = _layout(at, "diffrank-prefix")  # ranks and token counts: whole ticks only
    for axis, top in (("yaxis2", max(recorded.phrase.next_token_rank)),
                      ("xaxis", len(recorded.phrase.tokens) - 1)):
        assert layout[axis]["tickformat"] == ",d"
        assert layout[axis].get("dtick") == (1 if top <= 10 else None)
    assert [w.value for w in at.warning] == [plain(w) for w in recorded.warnings]
    assert "fewer than the 1000 asked" in at.warning[0].value
    phrase = recorded.phrase  # ranked whole, among a search of its own length
    label = f"Differential rank ({STANDING[phrase.rank_bound]}, {len(phrase.tokens)} tokens)"
    assert _metric(at, label) == f"≥ {phrase.rank:,} of {phrase.searched:,} searched"
    assert plain(phrase.verdict) in [m.value for m in at.markdown]

    at.selectbox(key="diffrank-strategy").set_value("beam")
    at.number_input(key="diffrank-length").set_value(2)
    at.select_slider(key="diffrank-beam").set_value(16)
    at.toggle(key="diffrank-swap").set_value(True)
    at.button(key="diffrank-run").click().run()
    assert not at.exception
    run = wait_for_run("diffrank", count=2, timeout=60)
    assert run.status == "done", run.error
    assert run.estimate_s > 0   # the page's job kept its estimate: an ETA from its first second
    at.run()
    assert not at.exception and not at.error
    assert any("(swapped)" in c.value and "beam search" in c.value for c in at.caption)
    assert float(_metric(at, "Phrase DS")) < 0  # the swap asks what was removed: the DS flips


def test_bad_settings_show_an_error_and_disable_the_search(demo_home):
    at = page_app("app_pages/diffrank.py").run()
    at.select_slider(key="diffrank-beam").set_value(8)
    at.number_input(key="diffrank-groups").set_value(16).run()
    assert not at.exception
    assert "groups" in at.error[0].value and at.button(key="diffrank-run").disabled


def test_an_exact_rank_says_out_of_how_many_sequences(lab_home):
    config = dataclasses.replace(SPEC.tiny_config(), phrase="To be")  # two tokens
    phrase = run_now(SPEC, config, progress=no_progress).phrase
    assert phrase.rank_bound == "exact"  # |V|^2 is small enough to enumerate
    [run] = Store().runs(SPEC.name)
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    label = f"Differential rank (exact, {len(phrase.tokens)} tokens)"
    assert _metric(at, label) == f"{phrase.exact_rank:,} of {phrase.exact_space:,} (exact)"


def test_a_search_marked_against_the_public_sample_lists_the_public_rows_apart(demo_home):
    demo = sources.preset(SPEC.name, "demo")
    recorded = run_now(SPEC, DiffRankConfig(**demo | {
        "length": 2, "beam": 16, "rows": 32, "sample_texts": 4, "sample_tokens": 16,
        "phrase": "", "public_sample": "demo:public_train"}), progress=no_progress)
    public = [row for row in recorded.rows if row.public.public]
    assert public and len(public) < len(recorded.rows)   # the secret's digits are private
    at = page_app("app_pages/diffrank.py").run()
    assert not at.exception and not at.error
    private_table, public_table = (t.value for t in at.get_by_key("diffrank-sequences").dataframe)
    assert set(private_table["public sample"]) == {"private"}
    assert list(public_table["phrase"]) == [row.phrase for row in public]
    assert all(label.startswith("public (") for label in public_table["public sample"])
    assert any(f"Also in the public sample: {len(public)} sequences" in m.value
               for m in at.markdown)
    assert any(f"{len(public)} of {len(recorded.rows)} sequences also occur in the public sample"
               in i.value for i in at.info)
