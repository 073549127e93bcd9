"""Uploads are the user's: models loaded on the Models page stay loaded when a page opens on its
defaults, and leave the pages room for theirs; an eviction that room forces names the model that
went, on the page that caused it and on the Models page; Load waits for the upload; pickers offer
only models that exist."""

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


def test_after_three_uploads_the_demo_pages_load_their_two_models_and_keep_the_uploads(
        demo_home, model_zip):
    """Issue #45: with two uploads the demo's two models evicted each other (no form until an
    upload was unloaded). The user's models have places of their own: a page loads its two
    models beside three uploads, evicting nothing, and the form is there."""
    upload(["first", "second", "third"], model_zip)
    seen = default_registry().evicted
    at = page_app("app_pages/audit.py").run()
    assert not at.exception and not any("would unload" in i.value for i in at.info)
    assert not at.button(key="audit-run").disabled
    mia = page_app("app_pages/mia.py").run()   # its two models, again
    assert not mia.exception and not mia.warning and not mia.button(key="mia-run").disabled
    assert default_registry().evicted == seen
    assert {"first", "second", "third", "demo:updated", "demo:base"} == set(
        default_registry().names())
    models = page_app("app_pages/models.py").run()
    assert not any(h.value == "Unloaded to make room" for h in models.header)


def test_loading_a_fourth_model_on_the_models_page_says_which_went(model_zip):
    at = upload(["a", "b", "c"], model_zip)
    at.file_uploader[0].set_value(("d.zip", model_zip, "application/zip")).run()
    at.button(key="models-load").click().run()
    assert default_registry().names() == ["b", "c", "d"]
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("a was unloaded to make room for d")
    assert "at most 3 models you loaded stay loaded" in warning
    models = page_app("app_pages/models.py").run()
    assert any(h.value == "Unloaded to make room" for h in models.header)
    assert any("a (" in m.value and "make room for d" in m.value for m in models.markdown)


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
