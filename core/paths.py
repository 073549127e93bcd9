"""Where Leakage Lab keeps its data, and which files a page may make it read.

The CLI is run by the machine's owner and reads any path it is given. Work started from the
app runs ``confined()``: a path it reads must then lie under the lab home (uploads, the demo,
the results) or under a folder the operator lists in ``$LEAKAGE_LAB_DATA`` (separated by
``os.pathsep``), so nobody with a browser can make the server read its other files.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator

from core.errors import UserError

MAX_FOLDER_ENTRIES = 10_000   # files of a folder checked for links out
_confined: ContextVar[bool] = ContextVar("leakage_lab_confined", default=False)


def home() -> Path:
    """``$LEAKAGE_LAB_HOME`` or ``./.leakage-lab`` (created on first use)."""
    root = Path(os.environ.get("LEAKAGE_LAB_HOME", Path.cwd() / ".leakage-lab"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_home() -> Path:
    """Where the folders keyed by what they were made from live (tiny models, the micro demo,
    domain references, DP checkpoints, retrained what-if models): ``$LEAKAGE_LAB_CACHE``, else
    the lab home. Such a folder holds the same thing whichever home asks, so one cache may
    serve several homes (the test suite shares one across a session)."""
    root = os.environ.get("LEAKAGE_LAB_CACHE", "").strip()
    if not root:
        return home()
    Path(root).mkdir(parents=True, exist_ok=True)
    return Path(root)


def readable_roots() -> list[Path]:
    """The folders confined work may read: the lab home, the cache and those in
    ``$LEAKAGE_LAB_DATA``."""
    extra = [Path(p).expanduser() for p in os.environ.get("LEAKAGE_LAB_DATA", "").split(os.pathsep)
             if p.strip()]
    return list(dict.fromkeys(p.resolve() for p in (home(), cache_home(), *extra)))


@contextmanager
def confined() -> Iterator[None]:
    """Within this block (this thread or task), ``check_readable`` refuses outside paths."""
    token = _confined.set(True)
    try:
        yield
    finally:
        _confined.reset(token)


def is_confined() -> bool:
    """Whether this is confined work (a page's, or a job a page started)."""
    return _confined.get()


def may_read(path: Path) -> bool:
    """Whether this work may read ``path``: always unconfined, else under ``readable_roots()``."""
    if not _confined.get():
        return True
    resolved = Path(path).expanduser().resolve()
    return any(resolved.is_relative_to(root) for root in readable_roots())


def shown(path: str | Path) -> str:
    """``path`` as a message may show it: in full for the CLI; for confined work (a page),
    relative to the lab home, or only its name, so no server path reaches a browser."""
    if not _confined.get():
        return str(path)
    path = Path(path).expanduser()
    try:
        return str(path.resolve().relative_to(home().resolve()))
    except ValueError:
        return path.name or "that path"


def check_readable(path: Path) -> None:
    """A ``UserError`` if confined work asks for a path outside ``readable_roots()``; checked
    before the path is looked at, so the message never tells whether the file exists."""
    if not may_read(path):
        raise UserError(f"{Path(path).name or path}: the app reads files only from its own "
                        "folder (uploads) and the folders its operator allows in "
                        "$LEAKAGE_LAB_DATA: upload the file instead")
    if _confined.get() and Path(path).is_dir():
        _check_folder(Path(path))


def _check_folder(folder: Path) -> None:
    """A ``UserError`` if a file of ``folder`` (up to ``MAX_FOLDER_ENTRIES`` looked at) is a
    link to a path confined work may not read: a folder is confined like its files."""
    for count, entry in enumerate(folder.rglob("*")):
        if count >= MAX_FOLDER_ENTRIES:
            raise UserError(f"{folder.name}: more than {MAX_FOLDER_ENTRIES:,} files in one "
                            "folder: upload the model's own files only")
        if entry.is_symlink() and not may_read(entry):
            raise UserError(f"{folder.name}/{entry.relative_to(folder)} links outside the app's "
                            "folders, which the app does not read: upload the file instead")
