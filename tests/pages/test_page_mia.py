"""The membership inference page: demo defaults, a recorded result drawn as the page draws it
(every attack's row, the blind baseline, both ROCs, histograms, groups, the per-text table),
bad input keeping Run disabled, and the exposure tab's demo secret."""

import base64
import json

import numpy as np
import pytest

from core.attacks.membership import exposure, mia
from core.attacks.membership.scores import ATTACKS
from core.demo import scenario
from mia_results import mia_result
from pagetest import page_app, record_run

PAGE = "app_pages/mia.py"


@pytest.fixture
def demo_page(demo_home):
    at = page_app(PAGE).run()
    assert not at.exception and not at.error
    return at


def _chart(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def test_demo_defaults_fill_the_form(demo_page):
    at = demo_page
    assert [t.label for t in at.tabs] == ["Membership inference", "Secret-sharer exposure"]
    assert at.selectbox(key="mia-model").value == "demo:updated"
    assert at.selectbox(key="mia-reference").value == "demo:base"
    assert at.text_input(key="mia-data-path").value == "demo:membership"
    assert at.text_input(key="mia-frequency_corpus-path").value == "demo:public_train"
    assert not at.button(key="mia-run").disabled
    keys = {b.key for b in at.get("download_button")}
    assert {"mia-example-membership.csv", "mia-example-membership.jsonl"} <= keys


def test_a_recorded_result_draws_every_view(demo_page):
    at = demo_page
    record_run(mia.SPEC, mia.MiaConfig(model="demo:updated", data="demo:membership"), mia_result())
    at.run()
    assert not at.exception and not at.error
    table = at.get_by_key("mia-result-attacks").dataframe[0].value
    assert len(table) == len(ATTACKS) + 1 and table["attack"].iloc[-1].startswith("Blind")
    assert list(table.columns[2:]) == ["AUROC [95% CI]", "TPR @ 0.1% FPR", "TPR @ 1% FPR",
                                       "TPR @ 5% FPR"]
    aurocs = [float(v.split()[0]) for v in table["AUROC [95% CI]"].iloc[:-1]]
    assert aurocs == sorted(aurocs, reverse=True)
    assert any("1/20 = 5.00%" in c.value for c in at.caption)
    roc = _chart(at, "mia-result-roc-log")
    assert len(roc["data"]) == len(ATTACKS) + 2   # every attack, the blind baseline, chance
    assert "members vs non-members" in _chart(at, "mia-result-histogram")["layout"]["title"]["text"]
    texts = at.get_by_key("mia-result-texts").dataframe[0].value
    assert len(texts) == 40 and set(ATTACKS) <= set(texts.columns)
    assert "Download the per-text scores (CSV)" in [b.label for b in at.get("download_button")]
    assert not at.warning


def test_a_leaky_split_is_warned_about(demo_page):
    record_run(mia.SPEC, mia.MiaConfig(model="demo:updated", data="demo:membership"),
               mia_result(blind_leaks=True))
    at = demo_page.run()
    assert any("blind baseline" in w.value for w in at.warning)


def test_a_score_below_chance_is_flagged_as_no_evidence_of_privacy(demo_page):
    """Issue #45: every score ranks non-members above members (AUROC far below 0.5, its
    interval too): the page says what that means instead of showing the figure bare."""
    inverted = mia_result(inverted=True)
    assert inverted.best().metrics.auroc_ci[1] < 0.5
    record_run(mia.SPEC, mia.MiaConfig(model="demo:updated", data="demo:membership"), inverted)
    at = demo_page.run()
    [flag] = [w.value for w in at.warning if "below chance" in w.value]
    assert "ranks non-members above members" in flag and "not evidence of privacy" in flag
    assert f"{inverted.best().title} (AUROC {inverted.best().metrics.auroc:.3f}" in flag
    assert "differ in distribution" in flag and "sign is inverted" in flag


def test_bad_settings_keep_run_disabled_and_say_the_range(demo_page):
    at = demo_page
    at.number_input(key="mia-k").set_value(1.5).run()
    assert "at most 1" in at.error[0].value and at.button(key="mia-run").disabled
    at.number_input(key="mia-k").set_value(0.2).run()
    at.toggle(key="mia-use-reference").set_value(False).run()
    at.multiselect(key="mia-attacks").set_value(["ref"]).run()
    assert "needs a reference model" in at.error[0].value and at.button(key="mia-run").disabled


def test_the_exposure_tab_starts_at_the_demo_secret(demo_page, tiny_demo):
    at = demo_page
    digits = scenario.load_manifest(tiny_demo).secret.digits
    assert at.text_area(key="exp-secrets").value.strip() == digits
    assert "{secret}" in at.text_input(key="exp-template").value
    assert not at.button(key="exp-run").disabled
    assert exposure.SPEC.name == "exposure"


def test_without_a_demo_the_page_explains_instead_of_failing():
    at = page_app(PAGE).run()
    assert not at.exception and not at.error
    assert any("not built yet" in i.value for i in at.info)


def test_the_heat_map_shows_where_a_chosen_text_carries_the_signal(demo_page):
    result = mia_result()
    for i, row in enumerate(result.rows):
        row.tokens, row.token_diff = ["text", f" {i}"], [0.5 * i, -1.0]
    record_run(mia.SPEC, mia.MiaConfig(model="demo:updated", data="demo:membership"), result)
    at = demo_page.run()
    assert not at.exception and not at.error
    best = result.best().name
    top = max(range(40), key=lambda i: result.rows[i].scores[best])
    assert at.selectbox(key="mia-result-heat").value == top   # most member-like first
    chart = _chart(at, "mia-result-heat-map")
    assert chart["layout"]["title"]["text"] == "Per token: log p_target − log p_reference"
    assert chart["data"][0]["text"][0][:2] == ["text", f" {top}"]   # the chosen text's tokens


def test_a_conversations_heat_map_colours_only_its_trained_tokens(demo_page):
    result = mia_result()
    for i, row in enumerate(result.rows):
        row.text = f"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nreply {i}<|im_end|>"
        row.tokens = ["<|im_start|>", "user", "hi", "<|im_start|>", "reply", f" {i}"]
        row.token_diff, row.trained = [0.1, 0.2, 0.3, 0.4, 0.5 * i, -1.0], [False] * 4 + [True] * 2
    record_run(mia.SPEC, mia.MiaConfig(model="demo:updated", data="demo:membership"), result)
    at = demo_page.run()
    best = result.best().name
    top = max(range(40), key=lambda i: result.rows[i].scores[best])
    assert at.selectbox(key="mia-result-heat").format_func(top).endswith(f"'reply {top}'")
    chart = _chart(at, "mia-result-heat-map")
    assert "on the trained tokens ([context] left blank)" in chart["layout"]["title"]["text"]
    start = "[&lt;|im_start|&gt;]"   # chart text is escaped: a token is never markup
    assert chart["data"][0]["text"][0][:6] == [start, "[user]", "[hi]", start, "reply", f" {top}"]
    z = np.frombuffer(base64.b64decode(chart["data"][0]["z"]["bdata"]), dtype="f8")
    np.testing.assert_array_equal(z[:6], [np.nan] * 4 + [0.5 * top, -1.0])
