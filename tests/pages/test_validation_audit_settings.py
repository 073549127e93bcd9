"""The Audit page's "Settings of the attacks" (issue #32): a value that is not what the setting
takes is one line on the page, naming the setting and what it expects, with Run disabled (no
traceback); a valid setting enables Run again."""

import pytest

from pagetest import page_app

BAD_SETTINGS = [
    ("extraction.n_samples=abc", "extraction: n_samples: expected a whole number, got 'abc'"),
    ("extraction.n_samples=1.5",
     "extraction: samples per strategy: expected a whole number from 1 to 500,000, got 1.5"),
    ("user-inference.bootstrap=", "user-inference: bootstrap: expected a whole number, got ''"),
    ("extraction.dedup=maybe", "extraction: dedup: expected true or false, not 'maybe'"),
]


@pytest.mark.parametrize("tab", ["audit", "audit-series"])
def test_a_bad_setting_is_one_line_and_keeps_run_disabled(demo_home, tab):
    at = page_app("app_pages/audit.py").run()
    if tab == "audit-series":
        at.multiselect(key="audit-series-checkpoints").set_value(["demo:base", "demo:updated"])
    run = at.run().button(key=f"{tab}-run")
    assert not at.exception and not at.error and not run.disabled
    for setting, message in BAD_SETTINGS:
        at.text_area(key=f"{tab}-settings").set_value(setting).run()
        assert not at.exception, setting
        [shown] = [e.value.replace("\\", "") for e in at.error]   # markdown escapes aside
        assert shown.endswith(message) and "\n" not in shown, shown
        assert shown.count(setting.partition(".")[0]) == 1, shown   # the prefix said once
        assert at.button(key=f"{tab}-run").disabled
        at.text_area(key=f"{tab}-settings").set_value("extraction.n_samples=300").run()
        assert not at.exception and not at.error and not at.button(key=f"{tab}-run").disabled
