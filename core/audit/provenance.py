"""What a reader needs to rerun an audit: the models' file hashes and cards, the data files'
hashes, the package versions, the tool's git commit, the machine and the time."""

from __future__ import annotations

import platform
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from core import sources
from core.data import data_file
from core.scoring.cache import file_sha256

PACKAGES = ("torch", "transformers", "peft", "safetensors", "numpy", "scipy", "scikit-learn",
            "opacus", "dp-accounting", "streamlit", "plotly")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FileHash:
    path: str
    bytes: int
    sha256: str


@dataclass
class Provenance:
    models: dict[str, list[FileHash]] = field(default_factory=dict)   # source -> its files
    cards: dict[str, dict] = field(default_factory=dict)              # source -> model card
    data: dict[str, FileHash] = field(default_factory=dict)           # source -> its file
    packages: dict[str, str] = field(default_factory=dict)
    commit: str = ""
    machine: str = ""
    python: str = ""
    started: str = ""


def file_hash(path: Path) -> FileHash:
    """Its SHA-256, from the score cache's memo of file hashes (a model is hashed once)."""
    return FileHash(str(path), path.stat().st_size, file_sha256(path))


def model_files(source: str) -> list[FileHash]:
    """The hashes of a model source's files (a named source's folder, or the folder or file
    given); [] for a source with no files here (e.g. a hub id resolved elsewhere)."""
    path = sources.model_path(source) if sources.is_named_model(source) else Path(source)
    if path is None or not path.exists():
        return []
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return [file_hash(p) for p in files]


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


def collect(models: dict[str, object], data: list[str]) -> Provenance:
    """Provenance of an audit of ``models`` (source -> its loaded model, for the card) on the
    ``data`` sources."""
    from core.serialize import to_jsonable

    return Provenance(
        models={source: model_files(source) for source in models},
        cards={source: to_jsonable(lm.card) for source, lm in models.items()},
        data={source: file_hash(data_file(source)) for source in data},
        packages={p: _version(p) for p in PACKAGES}, commit=git_commit(),
        machine=f"{platform.machine()} {platform.processor() or ''} {platform.system()}".strip(),
        python=platform.python_version(), started=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
