"""Names and links from someone else stay text on the pages that show them (issues #27 and #33):
a model named after its folder or by hand, a web address, and a Bound Explorer link whose
parameters are markup, draw no link, image, HTML (``test_markup_text.live_markup``), icon,
emoji, directive or bold (``live_styles``), in texts, alerts, labels and help alike."""

import shutil

from modelfiles import clean_models  # noqa: F401
from pagetest import page_app
from test_markup_audit import markdown_bodies
from test_markup_text import HOSTILE_NAME, live_markup, live_styles, shown

WIDGETS = ("button", "checkbox", "radio", "selectbox", "multiselect", "text_input", "text_area",
           "number_input", "slider", "select_slider", "toggle")
# A folder's name cannot hold "/", a model's name only letters, digits and . _ - : / + @
HOSTILE_FOLDER = "[x](www.evil.example) ![i](www.evil.example) **b** __u__ :smile: bob@evil.example"
HOSTILE_MODEL = ":material/home:__b__https://evil.example"


def drawn(at) -> list[str]:
    """Every markdown string of the page: bodies, headings, labels, and widgets' labels and
    help."""
    widgets = [w for kind in WIDGETS for w in getattr(at, kind)]
    return markdown_bodies(at) + [w.label for w in widgets] + [w.help for w in widgets if w.help]


def live(at) -> list[str]:
    """The links, images, icons, emoji and directives in what the page draws of the hostile
    texts, and their own bold words (a page may bold a name it shows as code)."""
    hostile = [s for s in drawn(at) if "evil.example" in s or "material" in s]
    return [m for s in hostile for m in live_markup(s)] + [
        m for s in hostile for m in live_styles(s) if m in ("b", "u") or m.startswith(":")]


def _load(at, path, name=""):
    at.text_input(key="models-path").set_value(str(path))
    at.text_input(key="models-name").set_value(name)
    at.button(key="models-load").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_a_models_name_and_source_are_no_links(tiny_lm_dir, tmp_path, monkeypatch):
    folder = shutil.copytree(tiny_lm_dir, tmp_path / "www.evil.example.model")
    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tmp_path))   # a folder the page may read
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Local path").run()
    _load(at, folder)
    shown_here = [e.value for e in [*at.success, *at.subheader, *at.caption]]
    assert [live_markup(text) for text in shown_here] == [[]] * len(shown_here)
    assert "Loaded **`www.evil.example`**" in shown_here[0]   # the name, as code: no link


def test_hostile_model_names_and_sources_draw_no_markup(tiny_lm_dir, tmp_path, monkeypatch,
                                                        demo_home):
    """Four models the user loaded, two of them named and stored by an attacker: on the Models
    page, whose fourth load unloads the hostile one (its warning names it), and on the audit
    page, which offers the other, nothing of theirs is a link, an image, an icon, an emoji or
    bold."""
    monkeypatch.setenv("LEAKAGE_LAB_DATA", str(tmp_path))
    folder = shutil.copytree(tiny_lm_dir, tmp_path / HOSTILE_FOLDER)
    at = page_app("app_pages/models.py").run()
    at.radio(key="models-from").set_value("Local path").run()
    _load(at, folder, HOSTILE_MODEL)
    _load(at, folder)                       # named after its folder
    _load(at, shutil.copytree(tiny_lm_dir, tmp_path / "plain-one"))
    assert HOSTILE_MODEL in {shown(s.value) for s in at.subheader}
    assert live(at) == []
    _load(at, shutil.copytree(tiny_lm_dir, tmp_path / "plain-two"))
    [warning] = [shown(w.value) for w in at.warning]
    assert warning.startswith(f"{HOSTILE_MODEL} was unloaded to make room for plain-two")
    assert live(at) == []
    audit = page_app("app_pages/audit.py").run()
    assert not audit.exception
    assert any("evil.example" in o for o in audit.selectbox(key="audit-model").options)
    assert live(audit) == []


def test_a_links_markup_is_reported_as_text():
    at = page_app("app_pages/bound_explorer.py")
    at.query_params.update({"sigma": "[click](https://evil.example)",
                            "q": "<img src=x onerror=alert(1)>"})
    at.run()
    assert not at.exception and len(at.error) == 2
    assert [live_markup(e.value) for e in at.error] == [[], []]


def test_a_links_query_values_draw_no_link_image_icon_or_bold():
    """Every parameter of a shared Bound Explorer link set to a name full of markup: each is
    refused in the red box, as the characters it is."""
    at = page_app("app_pages/bound_explorer.py")
    keys = ("sigma", "q", "steps", "bits", "delta")
    at.query_params.update(dict.fromkeys(keys, HOSTILE_NAME))
    at.run()
    assert not at.exception and len(at.error) == len(keys)
    for error in at.error:
        assert live_markup(error.value) == [] and live_styles(error.value) == [], error.value
        assert repr(HOSTILE_NAME) in shown(error.value)
