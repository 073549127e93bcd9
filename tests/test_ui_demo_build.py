"""A page that needs the demo offers to build it, as a job, and then loads its models."""

from core.demo import scenario
from pagetest import page_app, wait_for_run


def test_missing_demo_is_built_from_the_page(lab_home, monkeypatch):
    tiny = scenario.tiny_config()  # the tiny demo: seconds, not minutes
    monkeypatch.setattr(scenario.DemoBuildConfig, "demo_config", lambda self: tiny)
    at = page_app("app_pages/diffrank.py").run()
    assert not at.exception
    assert "not built yet" in at.error[0].value
    build = at.button(key="demo-build-demo:base")
    build.click().run()
    run = wait_for_run("demo-build", timeout=120)
    assert run.status == "done", run.error
    assert (lab_home / "demo" / "manifest.json").is_file()
    at.run()
    assert not at.exception and not at.error
    assert "demo-build-demo:base" not in [b.key for b in at.button]  # nothing left to build
