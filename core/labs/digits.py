"""The 8x8 digits that ship with scikit-learn, and tiny torch classifiers trained on them.

Every lab uses the same data: 1,797 images of 8x8 pixels, scaled from 0..16 to [0, 1] and
flattened to 64 features, split once into train and test halves (stratified, fixed seed) so
that numbers are comparable across labs and runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch
from torch import nn

from core.runtime import Progress, check_cancel, no_progress

IMAGE_SIDE = 8
N_FEATURES = IMAGE_SIDE * IMAGE_SIDE
N_CLASSES = 10


@dataclass(frozen=True)
class Digits:
    """Train/test split of the digits: ``x_*`` float32 of shape (n, 64) in [0, 1], ``y_*`` int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def x_all(self) -> np.ndarray:
        return np.concatenate([self.x_train, self.x_test])

    @property
    def y_all(self) -> np.ndarray:
        return np.concatenate([self.y_train, self.y_test])


@lru_cache(maxsize=1)
def load_digits() -> Digits:
    """The fixed split: half the images for training, half for testing (stratified, seed 0).

    The arrays are read-only so that the cached copy cannot be changed by accident.
    """
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    data = sklearn_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.5, stratify=y, random_state=0)
    arrays = [np.ascontiguousarray(a) for a in (x_train, y_train, x_test, y_test)]
    for a in arrays:
        a.setflags(write=False)
    return Digits(*arrays)


def as_images(x: np.ndarray) -> np.ndarray:
    """Flattened digits (n, 64) -> images (n, 8, 8)."""
    return np.asarray(x).reshape(-1, IMAGE_SIDE, IMAGE_SIDE)


def make_mlp(widths: Sequence[int], *, activation: type[nn.Module] = nn.ReLU,
             seed: int = 0) -> nn.Sequential:
    """An MLP ``widths[0] -> widths[1] -> ... -> widths[-1]`` with ``activation`` between the
    linear layers (none after the last, which gives logits); weights drawn from ``seed``."""
    if len(widths) < 2:
        raise ValueError("an MLP needs at least an input and an output width")
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        if i:
            layers.append(activation())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


def train_classifier(model: nn.Module, x: np.ndarray, y: np.ndarray, *, epochs: int,
                     lr: float = 1e-2, batch_size: int = 64, weight_decay: float = 0.0,
                     seed: int = 0, params: Sequence[nn.Parameter] | None = None,
                     progress: Progress = no_progress,
                     cancel: threading.Event | None = None) -> nn.Module:
    """Train ``model`` with Adam on cross-entropy, shuffled mini-batches (seeded), in place.

    ``params`` restricts training to some parameters (e.g. the upper layers); ``weight_decay``
    is Adam's L2 penalty (``weight_decay * w`` added to each gradient).
    ``progress`` gets the fraction of epochs done; ``cancel`` raises ``Cancelled`` between epochs.
    Returns the model, in eval mode.
    """
    xs = torch.tensor(np.asarray(x), dtype=torch.float32)
    ys = torch.tensor(np.asarray(y), dtype=torch.long)
    optimiser = torch.optim.Adam(list(params) if params is not None else model.parameters(),
                                 lr=lr, weight_decay=weight_decay)
    generator = torch.Generator().manual_seed(seed)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for epoch in range(epochs):
        check_cancel(cancel)
        order = torch.randperm(len(xs), generator=generator)
        for start in range(0, len(xs), batch_size):
            idx = order[start:start + batch_size]
            optimiser.zero_grad()
            loss_fn(model(xs[idx]), ys[idx]).backward()
            optimiser.step()
        progress((epoch + 1) / epochs, f"training: epoch {epoch + 1}/{epochs}")
    return model.eval()


@torch.no_grad()
def predict_logits(model: nn.Module, x: np.ndarray) -> np.ndarray:
    """Logits of ``model`` on ``x`` as a float numpy array (eval mode, no gradients)."""
    model.eval()
    return model(torch.tensor(np.asarray(x), dtype=torch.float32)).numpy()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of ``x`` that ``model`` labels as ``y``."""
    return float((predict_logits(model, x).argmax(axis=1) == np.asarray(y)).mean())
