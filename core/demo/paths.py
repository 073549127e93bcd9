"""Where a demo build lives and how to read it back (light: no torch, so that registering the
demo's sources costs nothing)."""

from __future__ import annotations

from pathlib import Path

from core import paths
from core.demo.config import MODEL_NAMES
from core.demo.manifest import MANIFEST, DemoManifest, read_manifest
from core.errors import UserError

__all__ = ["BUILD_HINT", "MANIFEST", "MODEL_NAMES", "data_file", "demo_root", "load_manifest",
           "model_dir"]

BUILD_HINT = "run `python -m core demo build`"


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
