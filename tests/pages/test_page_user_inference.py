"""The user inference page: demo defaults, a run as a job with its charts, bad data, canary
users, recorded what-if results drawn as the page draws them, and no demo at all."""

import json

import numpy as np
import pytest

from core.attacks.user_inference import spec as ui
from core.attacks.user_inference.canaries import CanaryUser
from core.demo import scenario, whatif
from core.evaluation import membership as me
from pagetest import page_app, record_run, wait_for_run


@pytest.fixture
def demo_page(demo_home):
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception and not at.error
    return at


def _chart(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def _title(at, key: str) -> str:
    return _chart(at, key)["layout"]["title"]["text"]


def _attack(seed: int, canaries: dict[str, bool] | None = None) -> ui.UserInferenceResult:
    """A seeded attack result on 16 users (4 of them canary users), without any model."""
    rng = np.random.default_rng(seed)
    users = [(f"u{i}", i % 2 == 0, i < 4) for i in range(16)]
    t_hat = {u: float(rng.normal(1.0 if member else 0.0)) for u, member, _ in users}
    canary = {u: (canaries or {}).get(u, flag) for u, _, flag in users}
    ranked = sorted(users, key=lambda user: -t_hat[user[0]])
    rows = [ui.UserRow(rank, u, t_hat[u], 3, member, canary[u], -60.0, -61.0, None)
            for rank, (u, member, _) in enumerate(ranked, 1)]
    groups = {"all": users, "real": [x for x in users if not canary[x[0]]],
              "canary": [x for x in users if canary[x[0]]]}
    metrics = [me.evaluate([m for _, m, _ in chosen], [t_hat[u] for u, _, _ in chosen],
                           group=name, bootstrap=20) for name, chosen in groups.items()]
    top = metrics[0]
    return ui.UserInferenceResult(
        rows=rows, samples=[], metrics=metrics, knowledge=[], auroc=top.auroc,
        auroc_ci=top.auroc_ci, tpr_at_1pct_fpr=top.tpr_at_1pct_fpr,
        tpr_at_1pct_fpr_ci=top.tpr_at_1pct_fpr_ci, tpr_at_5pct_fpr=top.tpr_at_5pct_fpr,
        tpr_at_5pct_fpr_ci=top.tpr_at_5pct_fpr_ci, threshold=None, calibration_fpr=0.05,
        n_known_out=8, n_users=16, n_samples=48, window=64, windowed_samples=0, notes=[],
        model="m", reference="r", data="d", device="cpu", seconds=1.0, users_per_minute=960.0)


def _what_if(baseline, attacked, variant: str) -> whatif.WhatIfResult:
    theirs = {m.group: m for m in attacked.metrics}
    rows = [whatif._row(m.group, m, theirs[m.group]) for m in baseline.metrics]
    return whatif.WhatIfResult(variant, "folder", 40, 16, 30, rows, baseline, attacked)


def test_demo_defaults_run_as_a_job_and_draw_every_view(demo_page, tiny_demo):
    at = demo_page
    assert [t.label for t in at.tabs] == ["Attack", "Canary users", "Mitigations"]
    assert at.selectbox(key="ui-model").value == "demo:updated"
    assert at.selectbox(key="ui-reference").value == "demo:base"
    assert at.radio(key="ui-attack-source").value == "demo attacker-side samples"
    split = scenario.tiny_config().user_split
    assert any(f"split **{split}**: {scenario.USER_SPLITS[split]}" in c.value for c in at.caption)
    at.number_input(key="ui-bootstrap").set_value(100)
    at.number_input(key="ui-knowledge_draws").set_value(5)
    at.button(key="ui-run").click().run()
    run = wait_for_run("user-inference", timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    assert run.params["model"] == "demo:updated" and run.params["data"] == "demo:user_samples"
    assert "AUROC · all" in at.metric[0].label and not at.metric[0].delta
    assert any(c.value.startswith("95% CI") for c in at.caption)  # intervals are no deltas
    assert any("below the resolution of" in c.value for c in at.caption)  # a few held-out users
    assert _title(at, "ui-result-histogram").startswith("T̂ of held-in")
    assert _title(at, "ui-result-roc-linear") == "ROC (linear)"
    assert "log-log" in _title(at, "ui-result-roc-log")
    assert _title(at, "ui-result-knowledge").startswith("Attacker knowledge")
    manifest = scenario.load_manifest(tiny_demo)
    n_users = sum(len(g.held_in) + len(g.held_out) for g in (manifest.users, manifest.canary_users))
    ranked = at.get_by_key("ui-result-users").dataframe[0].value
    assert len(ranked) == n_users and list(ranked["rank"]) == list(range(1, n_users + 1))
    assert any(c.value.startswith("Threshold") for c in at.caption)
    labels = [b.label for b in at.get("download_button")]
    assert {"Download JSON", "Download CSV", "Download per-sample scores (CSV)"} <= set(labels)


def test_bad_data_file_is_an_error_and_disables_the_run(demo_page, tmp_path):
    from core import paths

    outside = tmp_path / "bad.csv"
    outside.write_text("user_id,message\na,hello\n")
    at = demo_page
    at.radio(key="ui-attack-source").set_value("file path").run()
    at.text_input(key="ui-attack-path").set_value(str(outside)).run()
    assert "reads files only from its own folder" in at.error[0].value  # not even a preview
    bad = paths.home() / "bad.csv"
    bad.write_text("user_id,message\na,hello\n")
    at.text_input(key="ui-attack-path").set_value(str(bad)).run()
    assert not at.exception
    assert "has no text column: found user\\_id, message" in at.error[0].value
    assert at.button(key="ui-run").disabled
    at.number_input(key="ui-bootstrap").set_value(5).run()
    at.radio(key="ui-attack-source").set_value("demo attacker-side samples").run()
    assert "0 (no intervals) or from 10 to 100,000, not 5" in at.error[0].value
    assert at.button(key="ui-run").disabled


def test_canary_tab_builds_a_copy_to_download(demo_page):
    at = demo_page
    at.slider(key="ui-canary-words").set_value(4)
    at.number_input(key="ui-canary-count").set_value(2)
    at.button(key="ui-canary-run").click().run()
    run = wait_for_run("user-inference-canaries", timeout=30)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    canaries = at.get_by_key("ui-canary-result-canaries").dataframe[0].value
    assert len(canaries) == 2 and (canaries["words"] == 4).all()
    labels = [b.label for b in at.get("download_button")]
    assert "Download the copy (JSONL)" in labels and "Download the copy (CSV)" in labels
    at.text_input(key="ui-canary-users").set_value("nobody").run()
    at.button(key="ui-canary-run").click().run()
    run = wait_for_run("user-inference-canaries", count=2, timeout=30)
    assert run.status == "failed" and run.params["users"] == ["nobody"]
    at.run()
    assert any("no such user" in e.value for e in at.error)


def test_mitigation_form_and_a_recorded_what_if(demo_page):
    at = demo_page
    at.toggle(key="ui-mit-dedup").set_value(False).run()
    assert "choose a mitigation" in at.error[0].value and at.button(key="ui-mit-run").disabled
    at.number_input(key="ui-mit-per_user_limit").set_value(1).run()
    assert not at.error and not at.button(key="ui-mit-run").disabled
    config = whatif.MitigationConfig(dedup=False, per_user_limit=1, bootstrap=20)
    record_run(whatif.MITIGATION_SPEC, config, _what_if(_attack(0), _attack(1), config.label))
    at.run()
    assert not at.exception and not at.error
    table = at.get_by_key("ui-mit-result-comparison").dataframe[0].value
    assert list(table["group"]) == ["all", "real", "canary"]
    chart = _chart(at, "ui-mit-result-auroc-bars")
    assert [trace["name"] for trace in chart["data"]] == ["demo:updated", "≤ 1 samples per user"]


def test_a_recorded_canary_retrain_shows_the_chosen_users_and_the_comparison(demo_page):
    at = demo_page
    assert not at.button(key="ui-cr-run").disabled
    baseline, attacked = _attack(0), _attack(1, canaries={"u4": True, "u5": True})
    result = _what_if(baseline, attacked, "with canary users")
    chosen = [me.evaluate([True, False], [1.0, 0.0], group="chosen users", bootstrap=0)] * 2
    result.rows.insert(0, whatif._row("chosen users", *chosen))
    canaries = [CanaryUser("u4", "one two three four five six seven eight", 8, 3),
                CanaryUser("u5", "nine ten eleven twelve thirteen fourteen fifteen sixteen", 8, 3)]
    recorded = whatif.CanaryRetrainResult(**vars(result), canaries=canaries)
    record_run(whatif.CANARY_RETRAIN_SPEC, whatif.CanaryRetrainConfig(per_side=1), recorded)
    at.run()
    assert not at.exception and not at.error
    shown = at.get_by_key("ui-cr-result-canaries").dataframe[0].value
    assert len(shown) == 2 and shown["words"].tolist() == [8, 8]
    assert sorted(shown["held-in"].tolist()) == [False, True]
    table = at.get_by_key("ui-cr-result-comparison").dataframe[0].value
    assert list(table["group"]) == ["chosen users", "all", "real", "canary"]
    assert "Download JSON" in [b.label for b in at.get("download_button")]


def test_without_a_demo_the_page_explains_instead_of_failing():
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception and not at.error
    assert any("not built yet" in i.value for i in at.info)
    assert all(at.button(key=key).disabled for key in ("ui-run", "ui-cr-run", "ui-mit-run"))


def test_the_log_log_roc_starts_at_the_resolution_of_the_users():
    import math

    from core.evaluation.membership import evaluate
    from core.reporting.figures import roc_figure

    metrics = evaluate([1] * 8 + [0] * 33, list(range(41)), bootstrap=0)
    fig = roc_figure([metrics], log=True)
    assert fig.layout.xaxis.range[0] < math.log10(1 / 33) < fig.layout.xaxis.range[0] + 0.1
    assert fig.layout.yaxis.range[0] < math.log10(1 / 8) < fig.layout.yaxis.range[0] + 0.1
    assert "1/33" in fig.layout.title.text
    assert roc_figure([metrics], log=False).layout.xaxis.range == (0, 1.01)
