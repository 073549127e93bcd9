"""Uploads are the user's: models loaded on the Models page stay loaded when a page opens on its
defaults; an eviction that room forces names the model that went, on the page that caused it and
on the Models page; Load waits for the upload; pickers offer only models that exist."""

import pytest

from core.models import default_registry
from modelfiles import clean_models, zip_folder  # noqa: F401
from pagetest import AppTest, page_app

ZIP = "Upload a zip of a model folder"


@pytest.fixture(scope="module")
def model_zip(tiny_lm_dir, tmp_path_factory):
    """The tiny GPT-2 folder as a zip's bytes, as a user uploads it."""
    return zip_folder(tiny_lm_dir, tmp_path_factory.mktemp("zip") / "model.zip").read_bytes()


def upload(names: list[str], data: bytes) -> AppTest:
    """The Models page after uploading a zip under each of ``names`` and loading it."""
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value(ZIP).run()
    for name in names:
        at.file_uploader[0].set_value((f"{name}.zip", data, "application/zip")).run()
        at.button(key="models-load").click().run()
        assert not at.exception and not at.error
        assert any(f"Loaded **{name}**" in s.value for s in at.success)
    return at


def test_opening_the_audit_page_after_two_uploads_keeps_both(demo_home, model_zip):
    upload(["first", "second"], model_zip)
    at = page_app("app_pages/audit.py").run()
    assert not at.exception
    assert {"first", "second"} <= set(default_registry().names())
    assert any("would unload demo:updated, which this page uses too" in i.value for i in at.info)


def test_an_eviction_the_user_asks_for_names_the_model_on_the_page_and_the_models_page(
        demo_home, model_zip):
    upload(["first", "second", "third"], model_zip)
    at = page_app("app_pages/audit.py").run()
    assert default_registry().names() == ["first", "second", "third"]  # the default waits
    assert any("would unload first, which you loaded" in i.value for i in at.info)
    at.button(key="audit-model-load").click().run()
    assert not at.exception and "first" not in default_registry().names()
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("first was unloaded to make room for demo:updated")
    assert not any("would unload first" in i.value for i in at.info)  # the question is gone
    models = page_app("app_pages/models.py").run()
    assert any(h.value == "Unloaded to make room" for h in models.header)
    assert any("first (" in m.value and "demo:updated" in m.value for m in models.markdown)


def test_loading_a_fourth_model_on_the_models_page_says_which_went(model_zip):
    at = upload(["a", "b", "c"], model_zip)
    at.file_uploader[0].set_value(("d.zip", model_zip, "application/zip")).run()
    at.button(key="models-load").click().run()
    assert default_registry().names() == ["b", "c", "d"]
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("a was unloaded to make room for d")
    assert "all of them were yours" in warning


def test_load_waits_for_the_upload(model_zip):
    at = page_app("app_pages/models.py").run()
    assert not at.button(key="models-load").disabled  # a path or built-in: Load says what is missing
    at.radio(key="models-from").set_value(ZIP).run()
    assert at.button(key="models-load").disabled
    at.file_uploader[0].set_value(("m.zip", model_zip, "application/zip")).run()
    assert not at.button(key="models-load").disabled


def _picker_script():
    import streamlit as st

    from ui.models import model_picker

    lm = model_picker("Model", key="m", default="demo:updated")
    st.write(f"picked: {None if lm is None else lm.name}")


def test_pickers_offer_no_model_that_is_not_built_but_the_pages_default():
    at = AppTest.from_function(_picker_script, default_timeout=60).run()
    assert not at.exception
    assert "realistic:updated" not in at.selectbox(key="m").options
    assert "demo:base" not in at.selectbox(key="m").options
    assert at.selectbox(key="m").value == "demo:updated"  # the default: the demo banner builds it
    models = page_app("app_pages/models.py").run()
    assert "realistic:updated" not in models.selectbox(key="models-builtin").options
    assert any("realistic:updated" in c.value and "realistic-build" in c.value
               for c in models.caption)


@pytest.mark.parametrize("page, key", [("app_pages/diffrank.py", "diffrank-device"),
                                       ("app_pages/user_inference.py", "ui-device")])
def test_the_pages_that_list_their_fields_offer_the_device(demo_home, page, key):
    at = page_app(page).run()
    assert not at.exception
    assert at.selectbox(key=key).options == ["auto", "cpu", "cuda"]
