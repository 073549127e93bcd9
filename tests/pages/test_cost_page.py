"""Cost before Run on a page: the estimate beside Run, and above the threshold a "Run anyway"
box that must be ticked before Run enables (the threshold lowered here, as an operator would)."""

from core.cost import CONFIRM_ENV
from pagetest import page_app


def _estimates(elements) -> list[str]:
    return [e.value for e in elements if e.value.startswith("Estimated: about")]


def test_the_extraction_page_shows_the_estimate_and_asks_above_the_threshold(demo_home,
                                                                           monkeypatch):
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception and not at.error
    extraction = at.tabs[0]   # the page's second tab (memorisation in bits) has its own
    [line] = _estimates(extraction.caption)
    assert line.endswith("on this CPU.") and " and " in line
    assert not at.button(key="ex-run").disabled
    assert not at.checkbox      # below the threshold: nothing to confirm

    monkeypatch.setenv(CONFIRM_ENV, "0.0001")   # 6 ms: every run is "long"
    at.run()
    [warning] = _estimates(at.tabs[0].warning)
    assert "longer than 1 s" in warning
    assert at.button(key="ex-run").disabled
    at.checkbox(key="ex-run-anyway").check().run()
    assert not at.button(key="ex-run").disabled
    assert not at.exception


def test_a_model_that_cannot_be_sized_leaves_run_alone(demo_home, monkeypatch):
    from core.cost import sizes
    from core.errors import UserError
    from ui.cost import _estimate

    def unknown(source):
        raise UserError(f"{source!r} is not here yet")

    monkeypatch.setattr(sizes, "model_size", unknown)
    monkeypatch.setattr("core.attacks.user_inference.cost.model_size", unknown)
    _estimate.clear()   # estimates are kept a minute: this one must be made now
    at = page_app("app_pages/user_inference.py").run()
    assert not at.exception
    assert any(c.value.startswith("No estimate: ") for c in at.caption)
    assert not at.button(key="ui-run").disabled


def test_above_the_operators_budget_run_stays_disabled_and_the_page_says_why(demo_home,
                                                                            monkeypatch):
    from core.cost.job_budget import HOURS_ENV

    monkeypatch.setenv(HOURS_ENV, "0.000001")   # 3.6 ms: every run is above it
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception
    [refusal] = [e.value.replace("\\_", "_") for e in at.tabs[0].error if "budget" in e.value]
    assert refusal.startswith("Refused: this run is estimated at about ") and HOURS_ENV in refusal
    assert at.button(key="ex-run").disabled and not at.checkbox   # no "Run anyway" past it
