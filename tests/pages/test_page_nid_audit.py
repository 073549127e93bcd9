"""The DP lab's natural-identifier tab: a recorded audit drawn by its renderer, and its form's
one-line errors."""

from core.dp import nid_audit
from core.jobs import run_now
from core.runtime import no_progress
from pagetest import page_app


def test_the_nid_tab_draws_a_recorded_audit_and_refuses_a_pattern_without_alphabet(
        no_loaded_models):
    """The tab has no demo preset: its pickers start on the loaded models, here the run's own
    (earlier tests' models are unloaded first)."""
    config = nid_audit.tiny_config()
    result = run_now(nid_audit.SPEC, config, progress=no_progress)
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception and not at.error
    assert "Audit with natural identifiers" in [tab.label for tab in at.tabs]
    table = at.get_by_key("nid-identifiers").dataframe[0].value
    assert list(table["value"]) == [row.value for row in result.identifiers]
    assert at.get_by_key("nid-metrics").dataframe[0].value["AUROC"][0] == result.auroc

    at.text_input(key="nid-corpus").set_value(config.corpus[0])
    at.text_input(key="nid-pattern").set_value("[0-9]{20}").run()
    assert [e.value for e in at.error] == [
        "give the alphabet of the pattern's random characters (--alphabet, at least 2 distinct "
        "characters, e.g. 0123456789abcdef)"]
    assert at.button(key="nid-run").disabled
    at.text_input(key="nid-alphabet").set_value("0123456789").run()
    assert not at.error and not at.button(key="nid-run").disabled


def test_with_no_model_at_all_the_tab_says_so_and_the_page_runs(no_loaded_models, monkeypatch):
    """A fresh machine without SmolLM2 or the demo: the pickers have nothing to offer (no
    widget, no state) and the tab says to load a model instead of failing."""
    import ui.models

    monkeypatch.setattr(ui.models, "available_builtins", lambda: [])
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception
    assert any("Target model: no model yet" in i.value for i in at.info)


def test_opening_the_tab_loads_no_model_that_no_one_chose(no_loaded_models, monkeypatch):
    """Nothing loaded and no demo preset: the pickers wait for a choice instead of loading the
    first built-in (SmolLM2 took the page 40 s to open on a 2-core CPU)."""
    import ui.models
    from core.models.loaded import default_registry

    monkeypatch.setattr(ui.models, "available_builtins", lambda: ["smollm2"])
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception
    assert at.selectbox(key="nid-model").value is None
    assert at.selectbox(key="nid-model").options == ["smollm2"]
    assert default_registry().names() == []
