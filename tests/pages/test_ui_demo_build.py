"""A page that needs the demo offers to build it, as a job, and then loads its models."""

from core.demo import scenario, whatif
from pagetest import page_app, wait_for_run


def test_missing_demo_is_built_from_the_page(lab_home, monkeypatch):
    micro = whatif.micro_demo_config()  # the micro demo: a second or two, not minutes
    monkeypatch.setattr(scenario.DemoBuildConfig, "demo_config", lambda self: micro)
    at = page_app("app_pages/diffrank.py").run()
    assert not at.exception and not at.error  # a missing demo is no error: one banner, one button
    assert len(at.info) == 1 and "not built yet" in at.info[0].value
    assert [b.key for b in at.button if "demo-build" in b.key] == ["diffrank-demo-build"]
    build = at.button(key="diffrank-demo-build")
    build.click().run()
    run = wait_for_run("demo-build", timeout=120)
    assert run.status == "done", run.error
    assert (lab_home / "demo" / "manifest.json").is_file()
    at.run()
    assert not at.exception and not at.error
    assert "diffrank-demo-build" not in [b.key for b in at.button]  # nothing left to build
