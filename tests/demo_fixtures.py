"""The tiny demo scenario for tests (register these as fixtures in conftest.py).

``build_tiny_demo(root)`` trains the tiny config into ``root`` (seconds) and is cached by the
config hash, so calling it again with the same ``root`` returns at once.
``install_demo(root, home)`` copies a build into a Leakage Lab home, so that ``demo:base`` and
``demo:updated`` resolve to it there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.demo import scenario


def build_tiny_demo(root: Path) -> Path:
    """Build (or reuse) the tiny demo in ``root``; returns ``root``."""
    scenario.build(scenario.tiny_config(), root=Path(root))
    return Path(root)


def install_demo(root: Path, home: Path) -> Path:
    """Install the build in ``root`` as ``home``'s demo; returns the installed folder."""
    target = Path(home) / "demo"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root, target)
    return target
