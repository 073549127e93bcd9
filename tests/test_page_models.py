"""The Models page: built-in, path and bad inputs give cards or clear errors, never exceptions."""

from modelfiles import clean_models  # noqa: F401
from pagetest import page_app


def _load(at):
    at.button(key="models-load").click().run()
    assert not at.exception
    return at


def test_page_starts_empty():
    at = page_app("app_pages/models.py").run()
    assert not at.exception
    assert any("No model loaded" in i.value for i in at.info)


def test_demo_source_not_built_shows_how_to_build():
    at = page_app("app_pages/models.py").run()
    at.selectbox(key="models-builtin").set_value("demo:base")
    _load(at)
    assert any("python -m core demo build" in e.value for e in at.error)


def test_load_a_folder_by_path_shows_its_card_then_unload(tiny_lm_dir, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tiny_lm_dir.parent))  # a folder the page may read
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Local path").run()
    at.text_input(key="models-path").set_value(str(tiny_lm_dir))
    at.text_input(key="models-name").set_value("tiny")
    _load(at)
    assert not at.error
    assert any("Loaded **tiny**" in s.value for s in at.success)
    assert [h.value for h in at.subheader] == ["tiny"]
    assert any(m.label == "Perplexity check" for m in at.metric)
    at.text_input(key="ppl-tiny").set_value("To be, or not to be").run()
    assert any("Perplexity **" in m.value for m in at.markdown)
    at.button(key="unload-tiny").click().run()
    assert not at.exception and not at.subheader


def test_bad_path_and_empty_input_show_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tmp_path))  # a folder the page may read
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Local path").run()
    _load(at)
    assert any("Give a model" in e.value for e in at.error)
    at.text_input(key="models-path").set_value(str(tmp_path / "missing"))
    _load(at)
    assert any("is not a folder, a file" in e.value for e in at.error)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not even a pickle")
    (tmp_path / "config.json").write_text("{}")
    at.text_input(key="models-path").set_value(str(tmp_path))
    _load(at)
    assert any("pickled weights" in e.value for e in at.error)


def _picker_script():
    import streamlit as st

    from ui.models import model_picker

    lm = model_picker("Model", key="m", default="tiny")
    st.write(f"picked: {None if lm is None else lm.name}")


def test_model_picker_offers_loaded_models_and_builtins(tiny_lm_dir):
    from core.models import load_model
    from pagetest import AppTest

    at = AppTest.from_function(_picker_script, default_timeout=60).run()
    assert at.selectbox(key="m").value == "demo:base" and not at.exception  # nothing loaded: a built-in
    assert not at.error and "not built yet" in at.info[0].value  # a banner, not an error
    assert any("picked: None" in m.value for m in at.markdown)
    load_model(str(tiny_lm_dir), name="tiny", device="cpu")
    at = AppTest.from_function(_picker_script, default_timeout=60).run()
    assert at.selectbox(key="m").options == ["tiny", "demo:base", "demo:updated", "smollm2"]
    assert any("picked: tiny" in m.value for m in at.markdown) and not at.error
