"""A recorded demo build reopens on the Runs page as a readable summary (ui/render/demo_build.py)."""

from core.jobs import Store, load_result, run_now
from core.registry import get_spec
from pagetest import page_app


def test_runs_page_reopens_a_demo_build(demo_home):
    spec = get_spec("demo-build")
    summary = run_now(spec, spec.tiny_config(), progress=lambda *a, **k: None)  # cached: instant
    [run] = Store().runs("demo-build")
    assert load_result(run) == summary
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run.id).run()
    assert not at.exception and not at.error
    prefix = f"run-{run.id}-"
    models = at.get_by_key(f"{prefix}models").dataframe[0].value
    assert list(models["model"]) == ["demo:base", "demo:updated"]
    assert (models["parameters"] == summary.models["base"].parameters).all()
    planted = at.get_by_key(f"{prefix}insertions").dataframe[0].value
    assert list(planted["text"]) == [summary.secret.sentence] + [c.phrase for c in summary.canaries]
    assert list(planted["copies"]) == [summary.secret.count] + [c.count for c in summary.canaries]
    assert set(at.get_by_key(f"{prefix}plays").dataframe[0].value["set"]) == set(summary.plays)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Seed"] == "0" and metrics["Build time"] == f"{summary.build_seconds:.1f} s"
    assert f"{summary.checks.updated.validation_perplexity:.1f}" in metrics.values()
    assert any(summary.config_hash in c.value for c in at.caption)
