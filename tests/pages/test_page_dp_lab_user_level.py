"""The DP lab's user-level tab: a recorded example- vs user-level comparison drawn as AUROC bars
with intervals and a table per model, and its form."""

import json

from core.demo import user_level_dp as compare
from pagetest import page_app, record_run

TAB = "User-level DP vs user inference"


def _groups(real, canary):
    return [compare.GroupAuroc("all", 28, 33, (real[0] + canary[0]) / 2, [], 0.1),
            compare.GroupAuroc("real", 23, 28, real[0], list(real[1:]), 0.1),
            compare.GroupAuroc("canary", 5, 5, canary[0], list(canary[1:]), 0.2)]


def recorded() -> tuple:
    config = compare.UserLevelCompareConfig(epsilon=8.0, steps=200, bootstrap=200)
    arms = [compare.ArmResult("no DP", "example", 0.0, 0.03, None, 150.0, "m0",
                              _groups((0.81, 0.69, 0.92), (1.0, 1.0, 1.0)), 60.0),
            compare.ArmResult("example-level DP", "example", 0.72, 0.03, 8.01, 160.0, "m1",
                              _groups((0.62, 0.47, 0.77), (0.96, 0.8, 1.0)), 90.0),
            compare.ArmResult("user-level DP", "user", 2.9, 0.25, 8.0, 170.0, "m2",
                              _groups((0.52, 0.36, 0.68), (0.44, 0.08, 0.8)), 120.0)]
    return config, compare.UserLevelCompareResult(config, "dd113183aa7ff976", 1045, 29, arms, 300.0)


def test_user_level_tab_draws_a_recorded_comparison_side_by_side():
    record_run(compare.SPEC, *recorded())
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception
    assert TAB in [t.label for t in at.tabs]
    table = at.get_by_key("ul-arms").dataframe[0].value
    assert list(table["model"]) == ["no DP", "example-level DP", "user-level DP"]
    assert list(table["real AUROC"]) == [0.81, 0.62, 0.52]
    assert list(table["canary AUROC"]) == [1.0, 0.96, 0.44]
    assert table["canary 95% CI"].iloc[2] == "[0.08, 0.80]"
    assert list(table["unit"]) == ["example", "example", "user"]
    chart = next(c for c in at.get("plotly_chart") if c.key == "ul-auroc-bars")
    spec = json.loads(chart.proto.spec)
    assert [trace["name"] for trace in spec["data"]] == ["no DP", "example-level DP", "user-level DP"]
    assert "ε = 8" in spec["layout"]["title"]["text"]
    assert any("dd113183aa7ff976" in c.value and "29 users" in c.value for c in at.caption)


def test_user_level_form_checks_its_fields():
    at = page_app("app_pages/dp_lab.py").run()
    assert at.number_input(key="ul-epsilon").value == 8.0
    assert at.number_input(key="ul-user_samples_per_step").value == 4
    at.number_input(key="ul-bootstrap").set_value(5).run()
    assert any("bootstrap resamples must be 0" in e.value for e in at.error)
    assert at.button(key="ul-run").disabled
