"""Where a demo build lives and how to read it back (light: no torch, so that registering the
demo's sources costs nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from core import paths
from core.errors import UserError

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1  # raise when the manifest's shape changes: older builds are then rebuilt
MODEL_NAMES = ("base", "updated")
BUILD_HINT = "run `python -m core demo build`"


def demo_root() -> Path:
    return paths.home() / "demo"


def load_manifest(root: Path | None = None) -> dict:
    """The manifest of the demo build under ``root`` (default ``home()/demo``)."""
    path = Path(root or demo_root()) / MANIFEST
    if not path.exists():
        raise UserError(f"the demo scenario is not built yet; {BUILD_HINT}")
    manifest = json.loads(path.read_text())
    if manifest.get("version") != MANIFEST_VERSION:
        raise UserError(f"the demo under {path.parent} was built by another version of Leakage "
                        f"Lab (manifest version {manifest.get('version')}, this one reads "
                        f"{MANIFEST_VERSION}): run `python -m core demo build --force`")
    manifest["root"] = str(path.parent)
    return manifest


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
    if key not in manifest["files"]:
        raise UserError(f"unknown demo data file {key!r}: choose one of "
                        f"{', '.join(manifest['files'])}")
    return Path(manifest["root"]) / manifest["files"][key]
