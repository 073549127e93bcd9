"""``ui.text``: any string, passed through ``plain``, is markdown with no link, image or HTML in
it (GitHub's bare-URL and e-mail links included, which Streamlit's markdown draws) that reads as
the string's own characters; ``chart_text`` keeps plotly from reading tags in a string.

``live_markup`` is the check the page tests (test_markup_audit) use on what a page draws."""

from __future__ import annotations

import re
import textwrap

from hypothesis import given, settings, strategies as st
from markdown_it import MarkdownIt

from core import paths
from ui.text import chart_text, home_relative, plain, plain_in

_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# what GitHub-flavoured markdown links in text (Streamlit's markdown does): bare URLs, e-mails
_AUTOLINKED = re.compile(r"(?:https?://|www\.)\S*|[-.\w+]+@[-\w]+(?:\.[-\w]+)+", re.IGNORECASE)
HOSTILE = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
           "[click](https://evil.example)", "![b](https://beacon.example/x.png)",
           "[js](javascript:alert(1))", "<https://evil.example>", "www.evil.example/x",
           "mail bob@evil.example", "[a]: https://evil.example", ":red[hi] :material/home: :smile:")


def _tokens(source: str):
    """The tokens of ``source`` as Streamlit hands it to its markdown (dedented, stripped)."""
    def walk(tokens):
        for token in tokens:
            yield token
            yield from walk(token.children or [])
    return walk(_MARKDOWN.parse(textwrap.dedent(source).strip()))


_DIRECTIVE = re.compile(r"(?<!\\):[A-Za-z][\w-]*\[")   # Streamlit's :name[label]


def _segments(source: str) -> list[str]:
    """``source`` cut where Streamlit's directives cut it: a label ends at its first unmatched
    "]" (an escaped one aside), even inside a code span, which it then breaks."""
    segments, start = [], 0
    while found := _DIRECTIVE.search(source, start):
        end, depth = found.end(), 1
        while end < len(source) and depth:
            depth += {"[": 1, "]": -1}.get(source[end], 0)
            end += 2 if source[end] == "\\" else 1
        if depth:   # never closed: no directive
            break
        segments += [source[start:found.start()], source[found.end():end - 1]]
        start = end
    return segments + [source[start:]]


def live_markup(source: str) -> list[str]:
    """What markdown ``source`` would draw as a link, an image or HTML: link and image targets,
    raw HTML, and the URLs and e-mail addresses left in its text (not in code)."""
    found = []
    for token in (t for segment in _segments(source) for t in _tokens(segment)):
        if token.type in ("link_open", "image"):
            found.append(str(token.attrGet("href") or token.attrGet("src")))
        elif token.type in ("html_inline", "html_block"):
            found.append(token.content)
        elif token.type == "text":
            found += _AUTOLINKED.findall(token.content)
    return found


# Streamlit's own markup: it turns every ":material/" of the source into an icon (in code too,
# where ":material_" then shows); a directive (:red[..]) or an emoji shortcode unescaped
# outside code is drawn too (an escaped one is not, in Chromium, even with the emoji plug-in on).
_ICON = re.compile(r":material/")
_EMOJI = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")


def _outside_code(source: str) -> str:
    """``source`` with each code span a space (CommonMark: a run of n backticks up to the next
    run of exactly n; a backslash escapes a backtick outside code only)."""
    out, i = [], 0
    while i < len(source):
        if source[i] == "\\":
            out.append(source[i:i + 2])
            i += 2
            continue
        run = re.match(r"`+", source[i:])
        if run is None:
            out.append(source[i])
            i += 1
            continue
        close = re.compile(rf"(?<!`){run.group()}(?!`)").search(source, i + len(run.group()))
        out.append(" " if close else run.group())
        i = close.end() if close else i + len(run.group())
    return "".join(out)


def live_styles(source: str) -> list[str]:
    """What markdown ``source`` would draw as an icon, an emoji, a directive (colour, badge),
    or bold, italic or struck-through text (the text so styled)."""
    text = _outside_code(source)
    found = _ICON.findall(source) + _DIRECTIVE.findall(text) + _EMOJI.findall(text)
    tokens = [t for segment in _segments(source) for t in _tokens(segment)]
    for token in (t for t in tokens if t.type == "inline"):
        styled = 0
        for child in token.children or []:
            if child.type in ("strong_open", "em_open", "s_open"):
                styled += 1
            elif child.type in ("strong_close", "em_close", "s_close"):
                styled -= 1
            elif styled and child.type in ("text", "code_inline"):
                found.append(child.content)
    return found


def shown(source: str) -> str:
    """The characters markdown ``source`` shows (text and code), whitespace collapsed."""
    parts = [t.content if t.type in ("text", "code_inline") else " " for t in _tokens(source)
             if t.type in ("text", "code_inline", "softbreak", "hardbreak", "paragraph_open")]
    return " ".join("".join(parts).split())


def test_hostile_strings_are_no_markup_and_read_as_themselves():
    for text in HOSTILE:
        assert live_markup(plain(text)) == [], text
        assert shown(plain(text)) == text, text


HOSTILE_NAME = ("[x](https://evil.example) ![i](https://evil.example/b.png) :material/home: "
                "**b** __u__ ~~s~~ :smile: :red[r] https://evil.example")


def test_a_hostile_name_draws_no_link_image_icon_emoji_or_style():
    for text in (HOSTILE_NAME, repr(HOSTILE_NAME), f"Loaded {HOSTILE_NAME}: x"):
        assert live_markup(plain(text)) == [] and live_styles(plain(text)) == [], text
        assert shown(plain(text)) == text
    # the check sees each, unescaped: icon, emoji, directive, bold, underscore bold, strike
    assert sorted(live_styles(HOSTILE_NAME)) == sorted([":material/", ":smile:", ":red[", "b",
                                                        "u", "s"])
    for word in (":material/home:__b__https://evil.example", "x:material/bob@evil.example"):
        assert live_styles(plain(word)) == [] and shown(plain(word)) == word


def test_the_red_teams_loaded_alert_shows_the_name_as_text():
    """Issue #44: a model named https://evil.example/phish was announced as "Loaded
    https://evil.example/phish: …" with a live link; the Models page's alert, as it builds it."""
    for name in ("https://evil.example/phish", "[phish](https://evil.example/phish)",
                 "<a href='https://evil.example'>x</a>", "**https://evil.example/phish**"):
        alert = f"Loaded **{plain(name)}**: {plain('GPT2LMHeadModel')}, 27,488 parameters."
        assert live_markup(alert) == [] and live_styles(plain(name)) == [], alert
        assert shown(alert) == f"Loaded {name}: GPT2LMHeadModel, 27,488 parameters."


def test_ordinary_text_keeps_its_looks():
    assert plain("John Doe's credit card number is 0178236958207677.") == (
        "John Doe's credit card number is 0178236958207677.")
    assert plain("model 'demo:updated' is not loaded: load it") == (
        "model 'demo:updated' is not loaded: load it")
    assert plain("see https://example.org/a") == "see `https://example.org/a`"


def test_lines_that_would_start_a_list_a_heading_or_code_do_not():
    text = "  - one\n2. two\n\n        indented [x]\n===\n+ three"
    assert not [t.type for t in _tokens(plain(text))
                if t.type.startswith(("bullet", "ordered", "heading", "code_block", "hr"))]
    assert shown(plain(text)) == " ".join(text.split())


_PIECES = st.sampled_from(["https://", "http://", "www.", "@", "evil.example", "javascript:",
                           ":smile:", ":red", ":material/", "{x}", "&amp;", "&#60;", "\n", "\n\n",
                           "    ", "- ", "1. ", "==="])
_TEXT = st.lists(_PIECES | st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
                 | st.sampled_from(list("`*_[]()<>!#&$~|:/\\-+=.@ \t\"'")), max_size=40)


@settings(max_examples=400, deadline=None)
@given(_TEXT.map("".join))
def test_any_string_is_no_markup_and_reads_as_itself(text):
    source = plain(text)
    assert live_markup(source) == [] and live_styles(source) == []
    assert shown(source) == " ".join(text.split())


def test_a_directive_marks_the_text_and_leaves_inline_code_outside():
    source = plain_in("orange-background", "ick](https://evil.example/x [b] bob@evil.example")
    assert source == ("`ick](https://evil.example/x`:orange-background[ \\[b\\] ]"
                      "`bob@evil.example`")
    assert live_markup(source) == []   # in the label, the code's "]" would end it
    assert plain_in("red", "John Doe's card") == ":red[John Doe's card]"


def test_chart_text_escapes_tags_and_entities():
    assert chart_text('<a href="https://evil.example">x</a> &lt;') == (
        '&lt;a href="https://evil.example"&gt;x&lt;/a&gt; &amp;lt;')


def test_a_path_under_the_lab_home_is_shown_relative_to_it():
    upload = paths.home() / "uploads" / "3f2a" / "train.csv"
    assert shown(plain(f"{upload} vs demo:base")) == "uploads/3f2a/train.csv vs demo:base"
    assert home_relative({"data": str(upload.resolve()), "rows": [str(upload), 3]}) == {
        "data": "uploads/3f2a/train.csv", "rows": ["uploads/3f2a/train.csv", 3]}
    assert plain("/srv/data/train.csv") == "/srv/data/train.csv"   # the user's own path stays
