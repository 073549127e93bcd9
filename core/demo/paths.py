"""Where a demo build lives, how to read it back, and how a build takes its place (light: no
torch, so that registering the demo's sources costs nothing).

A build holds an exclusive lock (``build_lock``: ``flock`` on ``.<name>.lock`` beside the demo
folder; the OS drops it when the process dies, however it dies), writes into a staging folder
of its own (``staging_folder``) and swaps it in with two renames (``swap_in``), so concurrent
builds queue and a reader sees the old build or the new one, never a half-written one.
"""

from __future__ import annotations

import glob
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import paths
from core.demo.config import MODEL_NAMES
from core.demo.manifest import MANIFEST, DemoManifest, read_manifest
from core.errors import UserError
from core.runtime import Progress, check_cancel, no_progress

try:
    import fcntl
except ImportError:  # Windows: msvcrt's lock on the file's first byte instead
    fcntl = None
    import msvcrt

__all__ = ["BUILD_HINT", "CHAT_FILES", "MANIFEST", "MODEL_NAMES", "REALISTIC_FILES", "build_lock",
           "clear_leftovers", "data_file", "demo_root", "load_manifest", "model_dir",
           "realistic_file", "realistic_root", "staging_folder", "swap_in"]

BUILD_HINT = "run `python -m core demo build`"
# a realistic scenario (core.demo.realistic): its model and data files, relative to its root
REALISTIC_FILES = {"updated": "updated", "private_train": "data/private_train.jsonl",
                   "user_samples": "data/user_samples.jsonl", "test": "data/test.jsonl",
                   "public_sample": "data/public_sample.jsonl"}
# the chat scenario (core.demo.chat_scenario): its model and data files
CHAT_FILES = {"updated": "updated", "private_train": "data/private_train.jsonl",
              "user_samples": "data/user_samples.jsonl", "membership": "data/membership.jsonl",
              "heldout_subjects": "data/heldout_subjects.jsonl"}
LOCK_POLL_S = 0.2


def demo_root() -> Path:
    return paths.home() / "demo"


def load_manifest(root: Path | None = None) -> DemoManifest:
    """The manifest of the demo build under ``root`` (default ``home()/demo``)."""
    folder = Path(root or demo_root())
    if not (folder / MANIFEST).exists():
        raise UserError(f"the demo scenario is not built yet; {BUILD_HINT}")
    return read_manifest(folder)


def model_dir(name: str, root: Path | None = None) -> Path:
    """The Hugging Face folder of the demo model ``"base"`` or ``"updated"``."""
    if name not in MODEL_NAMES:
        raise UserError(f"unknown demo model {name!r}: choose one of {', '.join(MODEL_NAMES)}")
    folder = Path(root or demo_root()) / name
    if not (folder / "model.safetensors").exists():
        raise UserError(f"the demo model demo:{name} is not built yet; {BUILD_HINT}")
    return folder


def data_file(key: str, root: Path | None = None) -> Path:
    """A data file of the build (``private_train``, ``user_samples``, ``public_train``,
    ``validation``), as listed in the manifest."""
    manifest = load_manifest(root)
    if key not in manifest.files:
        raise UserError(f"unknown demo data file {key!r}: choose one of "
                        f"{', '.join(manifest.files)}")
    return Path(manifest.root) / manifest.files[key]


def realistic_root(scenario: str = "realistic") -> Path:
    """The folder of a realistic scenario: ``realistic`` (plays, LoRA), ``technical`` (Python's
    documentation, all weights), ``shift`` (plays, all weights, plants inside speeches) or
    ``chat``; see ``core.demo.realistic``."""
    return paths.home() / scenario


def realistic_file(key: str, scenario: str = "realistic") -> Path:
    """A model folder or data file of a realistic scenario (``REALISTIC_FILES``; the chat
    scenario's ``CHAT_FILES``)."""
    root = realistic_root(scenario)
    if not (root / "manifest.json").exists():
        raise UserError(f"the {scenario} scenario is not built yet; run `python -m core "
                        f"{scenario}-build` (SmolLM2-135M: tens of minutes on a CPU)")
    return root / (CHAT_FILES if scenario == "chat" else REALISTIC_FILES)[key]


@contextmanager
def build_lock(root: Path, *, progress: Progress = no_progress,
               cancel: threading.Event | None = None) -> Iterator[None]:
    """Hold the build lock of the demo folder ``root``; while another build (process or thread)
    holds it, report "waiting for another demo build" and wait (a set ``cancel`` raises
    ``Cancelled``)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(root.parent / f".{root.name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        if not _try_lock(fd):
            progress(0.0, "waiting for another demo build")
            while not _try_lock(fd):
                check_cancel(cancel)
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # drops the lock


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except (BlockingIOError, PermissionError):  # held by another build
        return False
    return True


def staging_folder(root: Path) -> Path:
    """A fresh, unique sibling of ``root`` for a build to write into."""
    return root.with_name(f"{root.name}.building-{uuid.uuid4().hex}")


def swap_in(staging: Path, root: Path) -> None:
    """Make the complete build in ``staging`` the demo at ``root``: rename the old one away,
    rename the new one in (each rename atomic), then delete the old one."""
    old = root.with_name(f"{root.name}.old-{uuid.uuid4().hex}")
    if root.exists():
        root.rename(old)
    staging.rename(root)
    shutil.rmtree(old, ignore_errors=True)


def clear_leftovers(root: Path) -> None:
    """Delete what builds killed mid-way left beside ``root`` (call it under ``build_lock``):
    staging folders and old builds renamed away; an old build is put back instead when a
    build was killed between its two renames, leaving no demo at ``root``."""
    pattern = glob.escape(root.name)
    for old in root.parent.glob(f"{pattern}.old-*"):
        if not root.exists():
            old.rename(root)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for staging in root.parent.glob(f"{pattern}.building-*"):
        shutil.rmtree(staging, ignore_errors=True)


def cached_summary(root: Path, config, summary_type: type):
    """The summary of the scenario build under ``root`` if its manifest is of ``config`` (its
    ``config_hash``), None otherwise."""
    import json

    from core.serialize import from_jsonable

    try:
        stored = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    if stored.get("config_hash") != config.config_hash():
        return None
    return from_jsonable(summary_type, stored["summary"] | {"root": str(root)})


def build_scenario(root: Path, config, summary_type: type, build_into, *, name: str,
                   progress: Progress = no_progress, cancel: threading.Event | None = None):
    """A scenario's build under ``root``: the cached one of ``config`` unless ``config.force``,
    else ``build_into(staging folder)`` swapped in, under the build lock (a failed build
    leaves nothing behind); its summary, ``root`` set."""
    with build_lock(root, progress=progress, cancel=cancel):
        clear_leftovers(root)
        cached = cached_summary(root, config, summary_type)
        if cached is not None and not config.force:
            progress(1.0, f"{name} already built")
            return cached
        staging = staging_folder(root)
        try:
            summary = build_into(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        swap_in(staging, root)
    progress(1.0, f"{name} built")
    summary.root = str(root)
    return summary
