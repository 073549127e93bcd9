"""The user inference page: demo defaults, a run as a job with its charts, bad data, canary
users, a mitigation what-if, and no demo at all."""

import json

import pytest
from demo_fixtures import install_demo

from core.attacks import user_inference as ui
from core.demo import scenario
from pagetest import page_app, wait_for_run


@pytest.fixture(scope="module")
def micro_demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("micro-demo-page")
    scenario.build(ui.micro_demo_config(), root=root)
    return root


@pytest.fixture
def demo_page(micro_demo, lab_home):
    install_demo(micro_demo, lab_home)
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception and not at.error
    return at


def test_demo_defaults_run_as_a_job_and_draw_every_view(demo_page, micro_demo):
    at = demo_page
    assert [t.label for t in at.tabs] == ["Attack", "Canary users", "Mitigations"]
    assert at.selectbox(key="ui-target").value == "demo:updated"
    assert at.selectbox(key="ui-reference").value == "demo:base"
    assert at.radio(key="ui-attack-source").value == "demo attacker-side samples"
    split = ui.micro_demo_config().user_split
    assert any(f"split **{split}**: {scenario.USER_SPLITS[split]}" in c.value for c in at.caption)
    at.number_input(key="ui-bootstrap").set_value(100)
    at.number_input(key="ui-draws").set_value(5)
    at.button(key="ui-run").click().run()
    run = wait_for_run("user-inference", timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    assert run.params["model"] == "demo:updated" and run.params["data"] == ui.DEMO_DATA
    assert "AUROC · all" in at.metric[0].label and "95% CI" in at.metric[0].delta
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles[0].startswith("T̂ of held-in") and titles[1] == "ROC (linear)"
    assert "log-log" in titles[2] and titles[3].startswith("Attacker knowledge")
    manifest = scenario.load_manifest(micro_demo)
    n_users = sum(len(manifest[g][s]) for g in ("users", "canary_users") for s in ("held_in", "held_out"))
    ranked = at.dataframe[0].value
    assert len(ranked) == n_users and list(ranked["rank"]) == list(range(1, n_users + 1))
    assert any(c.value.startswith("Threshold") for c in at.caption)
    labels = [b.label for b in at.get("download_button")]
    assert {"Download JSON", "Download CSV", "Download per-sample scores (CSV)"} <= set(labels)


def test_bad_data_file_is_an_error_and_disables_the_run(demo_page, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("user_id,message\na,hello\n")
    at = demo_page
    at.radio(key="ui-attack-source").set_value("file path").run()
    at.text_input(key="ui-attack-path").set_value(str(bad)).run()
    assert not at.exception
    assert "no text column" in at.error[0].value
    assert at.button(key="ui-run").disabled


def test_canary_tab_builds_a_copy_to_download(demo_page):
    at = demo_page
    at.slider(key="ui-canary-words").set_value(4)
    at.button(key="ui-canary-build").click().run()
    assert not at.exception and not at.error
    canaries = at.dataframe[0].value
    assert len(canaries) == 2 and (canaries["words"] == 4).all()
    labels = [b.label for b in at.get("download_button")]
    assert "Download the copy (JSONL)" in labels and "Download the copy (CSV)" in labels
    at.text_input(key="ui-canary-users").set_value("nobody").run()
    at.button(key="ui-canary-build").click().run()
    assert "no such user" in at.error[0].value


def test_mitigation_what_if_retrains_and_compares(demo_page, micro_demo):
    at = demo_page
    at.toggle(key="ui-mit-dedup").set_value(False).run()
    assert "choose a mitigation" in at.error[0].value and at.button(key="ui-mit-run").disabled
    at.number_input(key="ui-mit-limit").set_value(1).run()
    at.number_input(key="ui-mit-bootstrap").set_value(20).run()
    at.button(key="ui-mit-run").click().run()
    run = wait_for_run("user-inference-mitigation", timeout=60)
    assert run.status == "done", run.error
    result = run.result
    manifest = scenario.load_manifest(micro_demo)
    held_in = len(manifest["users"]["held_in"]) + len(manifest["canary_users"]["held_in"])
    assert result["user_samples_after"] == held_in < result["user_samples_before"]
    assert result["steps"] < ui.micro_demo_config().update_steps
    assert result["rows"][0]["baseline_auroc"] == result["baseline"]["auroc"]
    assert result["rows"][0]["variant_auroc"] == result["attacked"]["auroc"]
    at.run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table["group"]) == ["all", "real", "canary"]
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [trace["name"] for trace in chart["data"]] == ["demo:updated", "≤ 1 samples per user"]


def test_canary_retrain_trains_new_canary_users_and_compares_them(demo_page):
    at = demo_page
    at.number_input(key="ui-cr-per-side").set_value(1).run()
    at.number_input(key="ui-cr-bootstrap").set_value(20).run()
    at.button(key="ui-cr-run").click().run()
    run = wait_for_run("user-inference-canary-retrain", timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    canaries, table = at.dataframe[0].value, at.dataframe[1].value
    assert len(canaries) == 2 and canaries["words"].tolist() == [8, 8]
    assert sorted(canaries["held-in"].tolist()) == [False, True]
    assert list(table["group"]) == ["chosen users", "all", "real", "canary"]
    assert "Download JSON" in [b.label for b in at.get("download_button")]


def test_without_a_demo_the_page_explains_instead_of_failing():
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception
    assert any("not built yet" in e.value for e in at.error)
    assert at.button(key="ui-run").disabled
