"""User strings (names, paths, titles, texts, error messages) shown as the characters they are,
inside Streamlit's markdown (``plain``) or a plotly figure (``chart_text``): no links, images,
HTML, colours or icons from someone else's text, and no server path under the lab home."""

from __future__ import annotations

import html
import os
import re
from typing import Any

from core import paths

# What CommonMark reads as markup, each escaped with a backslash (allowed before any
# punctuation): links and images ([..](..)), HTML, entities and autolinks (<..>, &..;),
# emphasis, code, LaTeX ($), tables (|), strike-through (~), headings (#).
_SPECIAL = frozenset("\\`*_[]<>&$~|#")
# Streamlit's own: the colon closing an emoji or icon shortcode (:name:, group 1), the slash of
# :material/name:, the colon of a directive with attributes (:name{..}, which drop them) or of a
# colour, badge or size directive (:red, :blue-badge, :small, which vanish even without a label).
_DIRECTIVES = ("red|orange|yellow|green|blue|violet|gray|grey|primary|rainbow|small|shimmer|color"
               "|help")
_SHORTCODE = re.compile(r"(?=:[\w+-]+(:))")
_STREAMLIT = re.compile(rf"(?<=:material)/|:(?=[A-Za-z][\w-]*\{{"
                        rf"|(?:{_DIRECTIVES})(?:-background|-badge)?(?![\w-]))")
# GitHub-flavoured markdown links bare URLs and e-mail addresses in the text *after* escapes
# are resolved (``https\://x`` is a link too): a word holding one is shown as inline code. Code
# is no shelter from Streamlit's first step, which rewrites every ":material/" of the source
# (":material_" then shows in the code): such a word is cut at that slash, escaped outside code.
_LINKABLE = re.compile(r"https?://|www\.|[-.\w+]@[-\w]+\.[-\w]", re.IGNORECASE)
_ICON_SLASH = re.compile(r"(?<=:material)/")
_WORD = re.compile(r"[^\s`]+|`")
_CODE = re.compile(r"(?<!\\)(`[^`\s]+`)")   # a word ``_word`` made inline code
# A line that would open a list or underline a heading: "- ", "+ ", "1. ", "2) ", "===".
_BLOCK = re.compile(r"^([^\S\n]*)(\d+(?=[.)])|(?=[-+=]))")   # (st.markdown strips any space)


def home_relative(value: Any) -> Any:
    """``value`` (a string, or a JSON-like value of them) with each path under the lab home
    shown relative to it (``uploads/<hash>/train.csv``): a page shows no server path."""
    if isinstance(value, str):
        for home in {f"{paths.home()}{os.sep}", f"{paths.home().resolve()}{os.sep}"}:
            value = value.replace(home, "")
        return value
    if isinstance(value, dict):
        return {k: home_relative(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [home_relative(v) for v in value]
    return value


def plain(text: object) -> str:
    """``text`` as markdown that renders it literally: a word holding a URL or an e-mail address
    as inline code (no link), the lines after the first without their indent (no code block),
    a path under the lab home relative to it."""
    first, *rest = home_relative(str(text)).split("\n")
    lines = [first] + [line.lstrip(" \t") for line in rest]
    return "\n".join(_BLOCK.sub(r"\1\2\\", _WORD.sub(_word, line)) for line in lines)


def _word(match: re.Match) -> str:
    word = match.group()
    if _LINKABLE.search(word):   # a code span holds no backtick: words end at one
        return "\\/".join(f"`{part}`" if _LINKABLE.search(part) else _escaped(part)
                           for part in _ICON_SLASH.split(word))
    return _escaped(word)


def _escaped(word: str) -> str:
    """A word with no URL or e-mail, each character markdown or Streamlit would read escaped."""
    marked = ({m.start(1) for m in _SHORTCODE.finditer(word)}
              | {m.start() for m in _STREAMLIT.finditer(word)})
    return "".join(f"\\{c}" if c in _SPECIAL or i in marked else c for i, c in enumerate(word))


def plain_in(directive: str, text: object) -> str:
    """``plain(text)`` marked by Streamlit's ``directive`` (``:orange-background[..]``), each
    inline code span left outside: a directive's label ends at the first "]", in code or not."""
    parts = _CODE.split(plain(text))
    return "".join(part if i % 2 or not part else f":{directive}[{part}]"
                   for i, part in enumerate(parts))


def chart_text(text: object) -> str:
    """``text`` for a plotly title, label, annotation or hover text: plotly reads a few HTML
    tags there (links among them) and decodes entities, so the text is entity-escaped."""
    return html.escape(str(text), quote=False)
