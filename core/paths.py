"""Where Leakage Lab keeps its data: the results store, loaded uploads, the demo models."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """``$LEAKAGE_LAB_HOME`` or ``./.leakage-lab`` (created on first use)."""
    root = Path(os.environ.get("LEAKAGE_LAB_HOME", Path.cwd() / ".leakage-lab"))
    root.mkdir(parents=True, exist_ok=True)
    return root
