"""Content fingerprints of model and data files: the one notion of "the same model" and "the
same data" that every cache and resume keys on (the score cache on disk, the domain reference,
DP fine-tuning's and the canary audit's checkpoints). Which files a model source names is the
loaders' knowledge: ``core.models.loaders.source_identity`` is a model's fingerprint, made of
``files_fingerprint``; ``data_fingerprint`` is a data source's. This module sits beside
``core.readers.data``, below ``core.models`` and ``core.scoring``, so that both can use it.

A file is known by the SHA-256 of its content, remembered (in this process, and in
``home()/cache/file-digests.sqlite`` for the next ones) under its path and stat stamp: size,
mtime, ctime and inode. Any rewrite changes the stamp, even one that restores the size and the
modification time (``cp -p``, tar, ``rsync -t``): the kernel sets the ctime on every write and
nothing sets it back, and a file replaced by a rename has a new inode. A file changed in the last
``SETTLE_NS`` is hashed but not remembered: a second write within one tick of the filesystem's
clock could leave its stamp as it was (git's "racy" files).

Why the content, not the stamps alone: a stamp says that a file may have changed, not what it
holds, so a restored modification time served stale results, and a copy was a miss. Why
remembered: SHA-256 ran at 0.4 GB/s on this project's CPU machine (reading from the page cache:
2.7 GB/s), so SmolLM2-135M's float32 weights (540 MB) take 1.3 s and a 7B model's bfloat16
(14 GB) half a minute: paid once per version of a file, then one stat (4 µs) per file.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from collections.abc import Iterable, Mapping
from contextlib import closing
from pathlib import Path

from core import paths
from core.readers.data import data_file

MODEL_FILE_SUFFIXES = (".safetensors", ".json", ".txt", ".model")  # weights, config, tokenizer
FORMAT = b"leakage-lab files v1"
SETTLE_NS = 2 * 10**9  # a file changed more recently is hashed each time
MEMO_LIMIT = 4096       # digests remembered in this process
SQL_BATCH = 500
_digests: dict[tuple[str, str], str] = {}  # (path, stamp) -> SHA-256 of the content
_log = logging.getLogger(__name__)


def _stamp(path: Path) -> str:
    info = path.stat()
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def _settled(path: Path, stamp: str) -> bool:
    """Whether ``path`` still has ``stamp`` and was last changed over ``SETTLE_NS`` ago."""
    ctime_ns = int(stamp.split(":")[2])
    return _stamp(path) == stamp and time.time_ns() - ctime_ns > SETTLE_NS


def _database() -> closing[sqlite3.Connection]:
    """The digests remembered on disk (created in the private cache folder on first use)."""
    folder = paths.home() / "cache"
    folder.mkdir(mode=0o700, exist_ok=True)
    db = sqlite3.connect(folder / "file-digests.sqlite", timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, "
                "digest TEXT NOT NULL)")
    return closing(db)


def _recall(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The digests remembered on disk for these (path, stamp) keys (those found)."""
    found: dict[tuple[str, str], str] = {}
    try:
        with _database() as db:
            for start in range(0, len(keys), SQL_BATCH):
                batch = [path for path, _ in keys[start:start + SQL_BATCH]]
                rows = db.execute(f"SELECT path, stamp, digest FROM files WHERE path IN "
                                  f"({','.join('?' * len(batch))})", batch)
                found |= {(path, stamp): digest for path, stamp, digest in rows}
    except (sqlite3.Error, OSError) as err:
        _log.warning("file digests on disk: could not read them (%s); hashing", err)
    return {key: found[key] for key in keys if key in found}


def _memorise(digests: dict[tuple[str, str], str]) -> None:
    if len(_digests) + len(digests) > MEMO_LIMIT:
        _digests.clear()
    _digests.update(digests)


def _store(learnt: dict[tuple[str, str], str]) -> None:
    try:
        with _database() as db:
            db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?)",
                           [(*key, digest) for key, digest in learnt.items()])
    except (sqlite3.Error, OSError) as err:
        _log.warning("file digests on disk: could not store them (%s)", err)


def file_digests(files: Iterable[Path]) -> list[str]:
    """The SHA-256 (hex) of each file's content, hashed only when its stamp is new (module doc)."""
    keyed = [(path, (str(path), _stamp(path))) for path in (Path(f).resolve() for f in files)]
    unknown = [key for _, key in keyed if key not in _digests]
    if unknown:
        _memorise(_recall(unknown))
    found, learnt = [], {}
    for path, key in keyed:
        digest = _digests.get(key)
        if digest is None:
            with path.open("rb") as file:
                digest = hashlib.file_digest(file, "sha256").hexdigest()
            if _settled(path, key[1]):
                learnt[key] = digest
        found.append(digest)
    if learnt:
        _memorise(learnt)
        _store(learnt)
    return found


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of one file's content (``file_digests``)."""
    return file_digests([path])[0]


def files_fingerprint(files: Mapping[str, Path]) -> str:
    """SHA-256 (hex) of named files' contents: each name and its file's digest, by name. The
    paths do not count, so a copy has the fingerprint of its original."""
    names = sorted(files)
    digest = hashlib.sha256(FORMAT)
    for name, file_digest in zip(names, file_digests(files[name] for name in names)):
        digest.update(f"|{name}={file_digest}".encode())
    return digest.hexdigest()


def model_files(root: Path) -> dict[str, Path]:
    """The files a model at ``root`` is made of, by name: a folder's weight, config and
    tokenizer files (``MODEL_FILE_SUFFIXES``), or the file itself (a .gguf, a .zip)."""
    if root.is_file():
        return {root.name: root}
    return {p.name: p for p in sorted(root.iterdir())
            if p.suffix in MODEL_FILE_SUFFIXES and p.is_file()}


def data_fingerprint(source: str) -> str:
    """The SHA-256 (hex) of the content of the data file ``source`` names (a named data source or
    a path: ``core.readers.data.data_file``, with its checks), not of its path."""
    return file_sha256(data_file(source))


def build_fingerprint(scenario: str) -> str | None:
    """The fingerprint of a scenario's build (``demo``, ``realistic``): its named models'
    (``<scenario>:...``, ``core.sources``) files, 12 hex digits; None when it is not built.
    Builds are deterministic on one machine but not across machines (float rounding in
    training), so figures measured on one build are tagged with it."""
    from core import sources
    from core.errors import UserError

    digest = hashlib.sha256(FORMAT)
    names = [n for n in sources.model_names() if n.startswith(f"{scenario}:")]
    for name in names:
        try:
            path = sources.model_path(name)
        except UserError:   # not built
            return None
        if path is None or not path.exists():
            return None
        digest.update(f"|{name}={files_fingerprint(model_files(path))}".encode())
    return digest.hexdigest()[:12] if names else None
