"""User strings (names, paths, titles, texts, error messages) shown inside Streamlit's markdown
as the characters they are: no links, images, HTML, colours or icons from someone else's text."""

from __future__ import annotations

import re

# What can turn text into something else: links and images ([..](..), also Streamlit's
# :color[..] directives), HTML and autolinks (<..>), emphasis, code, LaTeX ($), tables (|),
# strike-through (~) and headings (#). CommonMark lets a backslash escape each of them.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$~|#])")


def plain(text: object) -> str:
    """``text`` escaped so that markdown renders it literally."""
    return _MARKDOWN.sub(r"\\\1", str(text))
