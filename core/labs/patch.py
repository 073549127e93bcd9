"""Square trigger patches stamped onto flattened 8x8 digits (shared by the integrity labs).

Stamping replaces the pixels under a binary mask ``m`` by a pattern ``p``:
``stamp(x) = x * (1 - m) + p * m`` (Gu et al. 2017, BadNets; Liu et al. 2018 trojaning).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from core.labs.digits import IMAGE_SIDE

Corner = Literal["top-left", "bottom-right"]


def square_mask(size: int, corner: Corner) -> np.ndarray:
    """A flattened (64,) float32 mask with a ``size`` x ``size`` square of ones in ``corner``."""
    mask = np.zeros((IMAGE_SIDE, IMAGE_SIDE), dtype=np.float32)
    span = slice(0, size) if corner == "top-left" else slice(IMAGE_SIDE - size, IMAGE_SIDE)
    mask[span, span] = 1.0
    return mask.ravel()


def checkerboard(size: int, corner: Corner) -> np.ndarray:
    """A flattened (64,) pattern: a white/black checkerboard on the ``size`` x ``size`` square,
    white at the image corner (both corners have an even row + column)."""
    rows, cols = np.indices((IMAGE_SIDE, IMAGE_SIDE))
    board = ((rows + cols) % 2 == 0).astype(np.float32)
    return board.ravel() * square_mask(size, corner)


def stamp(x: np.ndarray, mask: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Images ``x`` (n, 64) with the masked pixels replaced by ``pattern``."""
    return (np.asarray(x, dtype=np.float32) * (1.0 - mask) + pattern * mask).astype(np.float32)
