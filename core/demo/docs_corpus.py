"""A technical corpus for the second realistic scenario: Python's own reference documentation.

Every CPython ships the language reference's topics as plain text (``pydoc_data.topics``, the
text ``help("for")`` prints: 79 topics, about 465 kB). It is real technical prose of another
domain than the plays, needs no download, and has the shape the demo's split expects: a topic
plays the part of a play, its paragraphs the speeches, and its one "speaker" (the topic's
author) a user. The text is the Python documentation (PSF License); it differs a little between
Python versions, so a build records the version it read.
"""

from __future__ import annotations

import platform
import re
from functools import lru_cache

from core.demo.corpus import Speech
from core.errors import UserError

SPEAKER = "docs"
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@lru_cache(maxsize=1)
def _topics() -> dict[str, str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise UserError("this Python has no pydoc_data (its documentation topics), which the "
                        "technical scenario reads; use a full CPython install") from None
    return dict(topics)


def play_names() -> list[str]:
    """The topics, sorted (e.g. ``"for"``, ``"with"``)."""
    return sorted(_topics())


def load_speeches(topics: list[str] | None = None) -> list[Speech]:
    """The paragraphs of ``topics`` (all by default), whitespace folded to single spaces."""
    texts = _topics()
    return [Speech(topic, SPEAKER, " ".join(paragraph.split()))
            for topic in (topics or play_names())
            for paragraph in _PARAGRAPH_BREAK.split(texts[topic]) if paragraph.strip()]


def corpus_license() -> dict:
    """Where the text comes from, for a build's manifest."""
    return {"package": "pydoc_data (CPython standard library)",
            "version": platform.python_version(), "license": "PSF License",
            "text": "the Python language reference's help topics"}
