"""Names and links from someone else stay text on the pages that show them (issue #27, defect
12): a model named after its folder, a web address, and a Bound Explorer link whose
parameters are markup, draw no link, image or HTML (``test_markup_text.live_markup``)."""

import shutil

from modelfiles import clean_models  # noqa: F401
from pagetest import page_app
from test_markup_text import live_markup


def test_a_models_name_and_source_are_no_links(tiny_lm_dir, tmp_path, monkeypatch):
    folder = shutil.copytree(tiny_lm_dir, tmp_path / "www.evil.example.model")
    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tmp_path))   # a folder the page may read
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Local path").run()
    at.text_input(key="models-path").set_value(str(folder))
    at.button(key="models-load").click().run()
    assert not at.exception and not at.error
    shown = [e.value for e in [*at.success, *at.subheader, *at.caption]]
    assert [live_markup(text) for text in shown] == [[]] * len(shown)
    assert "Loaded **`www.evil.example`**" in shown[0]   # the name, as code: no link


def test_a_links_markup_is_reported_as_text():
    at = page_app("app_pages/bound_explorer.py")
    at.query_params.update({"sigma": "[click](https://evil.example)",
                            "q": "<img src=x onerror=alert(1)>"})
    at.run()
    assert not at.exception and len(at.error) == 2
    assert [live_markup(e.value) for e in at.error] == [[], []]
