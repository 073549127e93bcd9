"""The scoring engine's model body and readouts as fused kernels on a GPU (``torch.compile``).

Eager PyTorch runs a transformer as one kernel per element-wise step: scoring SmolLM2-135M
spent ~80% of the H100's time outside the matrix products (HF's RMSNorm and rotary embeddings in
float32, a float32 log-softmax over 49,152 logits; ``bench/results/gpu-h100-profile.txt``).
Inductor fuses them: 403k to 630k tokens/s there (``docs/benchmarks.md``). Compiling takes
~30-80 s, so it runs only on CUDA (where Triton generates the kernels), switched by
``LEAKAGE_LAB_COMPILE``: ``auto`` (the default) compiles a job of ``COMPILE_MIN_TOKENS`` scored
tokens or more, ``1`` every job, ``0`` none. The model's body is compiled once, with dynamic
shapes (one compile serves every batch and window length), where its head splits off
(``budget.head_splits``), and the model keeps it for the jobs after, whatever their size. A
function the compiler fails on runs eagerly from then on (logged): compiling is a speed-up,
never a new way to fail.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import weakref
from collections.abc import Callable
from typing import Any

import torch

from core.errors import UserError
from core.scoring.pass_size import head_splits
from core.scoring.readouts import chunk_values

logger = logging.getLogger(__name__)
ENV = "LEAKAGE_LAB_COMPILE"
# Tokens from which ``auto`` compiles: SmolLM2-135M's body and readouts compile in ~1 min on the
# H100 machine and then save ~0.3 s per 262k tokens (bench.gpu's scoring rows).
COMPILE_MIN_TOKENS = 20_000_000
# $LEAKAGE_LAB_COMPILE's values: compile every job (True), none (False), or as ``auto`` (None)
MODES = {"auto": None, "1": True, "on": True, "true": True, "yes": True,
         "0": False, "off": False, "false": False, "no": False}


def compile_wanted(device: torch.device, tokens: int) -> bool:
    """Whether a job of ``tokens`` scored tokens on ``device`` runs compiled kernels; a
    ``UserError`` naming ``$LEAKAGE_LAB_COMPILE`` for a value it does not know (any machine)."""
    text = os.environ.get(ENV, "").strip()
    if (text.lower() or "auto") not in MODES:
        raise UserError(f"${ENV} must be auto, 1 or 0, not {text!r}")
    forced = MODES[text.lower() or "auto"]
    if device.type != "cuda" or forced is False:
        return False
    return (forced or tokens >= COMPILE_MIN_TOKENS) and has_triton()


def has_triton() -> bool:
    """Whether Triton, which generates the compiled GPU kernels, is installed."""
    return importlib.util.find_spec("triton") is not None


class Compiled:
    """``function`` compiled by ``torch.compile`` (``dynamic`` as there), called like it; the
    first failure of the compiler makes it run ``function`` eagerly for good."""

    def __init__(self, function: Callable, *, dynamic: bool | None = None, what: str = ""):
        self.function, self.what = function, what or getattr(function, "__name__", "function")
        self.compiled: Callable | None = torch.compile(function, dynamic=dynamic)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.compiled is not None:
            try:
                return self.compiled(*args, **kwargs)
            except torch.OutOfMemoryError:
                raise
            except Exception as err:  # noqa: BLE001 - the compiler's failure: run eagerly
                logger.warning("running %s eagerly: torch.compile failed (%s: %s)", self.what,
                               type(err).__name__, str(err).splitlines()[0] if str(err) else "")
                self.compiled = None
        return self.function(*args, **kwargs)


_BODIES: weakref.WeakKeyDictionary[torch.nn.Module, Compiled] = weakref.WeakKeyDictionary()


@functools.cache   # made on first use: importing torch's compiler takes seconds
def compiled_readouts() -> Compiled:
    return Compiled(chunk_values, dynamic=True, what="the scoring readouts")


def prepare(model: torch.nn.Module, device: torch.device, tokens: int) -> None:
    """Compile ``model``'s body for a job of ``tokens`` tokens when that pays (see module)."""
    if (model not in _BODIES and compile_wanted(device, tokens)
            and head_splits(model)):
        _BODIES[model] = Compiled(model.base_model, dynamic=True, what="the model's body")


def body(model: torch.nn.Module, shape: torch.Size) -> torch.nn.Module | Compiled:
    """``model``'s body for a batch of ``shape`` (windows, length): compiled once ``prepare``
    chose to, but for a single window or token, which would compile again (the compiler
    specialises sizes of 1)."""
    return _BODIES.get(model, model.base_model) if min(shape) > 1 else model.base_model


def readouts(model: torch.nn.Module, positions: int):
    """``chunk_values`` for a chunk of ``positions``: compiled where the body is (bar one
    position, as in ``body``)."""
    return chunk_values if model not in _BODIES or positions < 2 else compiled_readouts()
