"""What a reader needs to rerun an audit: the models' file hashes and cards, the data files'
hashes, the package versions, the tool's git commit, the machine and the time."""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from core import sources
from core.readers.data import data_file
from core.fingerprint import file_sha256

PACKAGES = ("torch", "transformers", "peft", "safetensors", "numpy", "scipy", "scikit-learn",
            "opacus", "dp-accounting", "streamlit", "plotly")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FileHash:
    path: str   # a model's file: relative to its folder; a data file: as found
    bytes: int
    sha256: str


@dataclass
class Provenance:
    models: dict[str, list[FileHash]] = field(default_factory=dict)   # source -> its files
    loaded_from: dict[str, str] = field(default_factory=dict)         # source -> what it loaded
    cards: dict[str, dict] = field(default_factory=dict)              # source -> model card
    data: dict[str, FileHash] = field(default_factory=dict)           # source -> its file
    packages: dict[str, str] = field(default_factory=dict)
    commit: str = ""
    machine: str = ""
    python: str = ""
    started: str = ""    # when the audit started (its models loading), local time
    finished: str = ""   # when its last attack ended


def file_hash(path: Path, shown: str | None = None) -> FileHash:
    """Its SHA-256, from the memo of file hashes (a model is hashed once); named ``shown``."""
    return FileHash(str(path) if shown is None else shown, path.stat().st_size,
                    file_sha256(path))


def model_files(source: str) -> list[FileHash]:
    """The hashes of a model source's files (a named source's folder, or the folder or file
    given), each named relative to that folder; [] for a source with no files here (e.g. a hub
    id resolved elsewhere)."""
    path = sources.model_path(source) if sources.is_named_model(source) else Path(source)
    if path is None or not path.exists():
        return []
    if not path.is_dir():
        return [file_hash(path, path.name)]
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return [file_hash(p, p.relative_to(path).as_posix()) for p in files]


def interpreter() -> str:
    """The Python running the tool, as a rerun command names it: from the tool's folder where it
    lies there (its ``.venv``: no server path), else by its absolute path; a fresh shell, with
    no environment activated, then runs it with the packages the audit had."""
    path = Path(sys.executable).absolute()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def git_commit() -> str:
    """The tool's commit (with "+changes" when the work tree differs), or "" outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + ("+changes" if dirty else "")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def clock(seconds: float | None = None) -> str:
    """A time as the report gives it (local, to the second); now without ``seconds``."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(seconds))


def collect(models: dict[str, object], data: list[str], started: float) -> Provenance:
    """Provenance of an audit of ``models`` (source as the audit names it, e.g. a loaded model's
    name -> that loaded model: its files, its card) on the ``data`` sources, which started at
    ``started`` (``time.time()``) and finished now."""
    from core.models.card import check_perplexity
    from core.serialize import to_jsonable

    for lm in models.values():
        check_perplexity(lm)   # the card shows it

    return Provenance(
        models={source: model_files(lm.source) for source, lm in models.items()},
        loaded_from={source: lm.source for source, lm in models.items()},
        cards={source: to_jsonable(lm.card) for source, lm in models.items()},
        data={source: file_hash(data_file(source)) for source in data},
        packages={p: _version(p) for p in PACKAGES}, commit=git_commit(),
        machine=f"{platform.machine()} {platform.processor() or ''} {platform.system()}".strip(),
        python=platform.python_version(), started=clock(started), finished=clock())
