"""An operator's limit: a whole number read from an environment variable each time it is checked.

The limits themselves live with what they bound (``core.models.limits`` for model loading and
uploads, ``core.readers.data`` for data files); docs/operations.md ("Security") lists them all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.errors import UserError


@dataclass(frozen=True)
class Limit:
    """A limit an operator may change with the environment variable ``env``."""

    env: str
    default: int

    def get(self) -> int:
        """The value now: ``$env`` (a positive whole number, ``8e9`` accepted) or the default."""
        text = os.environ.get(self.env, "").strip().replace("_", "")
        if not text:
            return self.default
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if value < 1 or value != int(value):
            raise UserError(f"${self.env} must be a positive whole number, not {text!r}")
        return int(value)

    def hint(self, change: str = "raise") -> str:
        """How to allow more, for the end of a refusal."""
        return f"an operator may {change} ${self.env}"


def human_bytes(size: float) -> str:
    """``size`` bytes in B, KiB, MiB, GiB or TiB with one decimal."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"
