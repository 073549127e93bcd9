"""Loaded models under short names: a process-wide, bounded (LRU) registry.

Pages, CLI commands and background jobs of one process share it, so a model is loaded once.
A model the user loaded (``pin``: the Models page, an upload) is pinned; the pinned models and
those pages load on their own have ``capacity`` places each, and a model evicts only the least
recently used of its own kind (issue #45: two uploads made the demo's two models evict each
other). Each eviction is recorded (``evictions``), so the page that caused it and the
Models page can say which model went and why. An evicted model's memory is released (``del``,
then ``gc.collect()`` only if reference counting left weights of at least ``COLLECT_BYTES``
alive, and ``torch.cuda.empty_cache()``; freed once no caller still holds it). A full collection
takes 0.3-0.5 s in a process that has imported torch, transformers and streamlit (measured on
the 2-core CPU): a model with no reference cycle, such as a transformers causal LM, is freed by
the ``del`` alone, and a smaller one still held (by a caller, or in a cycle) is left to the
collector's own schedule (the test suite spent 30 s of CPU in collections that freed nothing).
"""

from __future__ import annotations

import gc
import re
import threading
import uuid
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.errors import UserError
from core.models import limits
from core.models.card import ModelCard, describe
from core.models.checks import model_bytes
from core.models.loaders import BUILTIN_SOURCES, load_source, source_identity
from core.models.names import check_lookalike

NAME_CHARACTERS = r"\w.:@+/-"
MAX_NAME = 64

DEFAULT_CAPACITY = 3
COLLECT_BYTES = 64 * 2**20   # weights from this size up are worth a full collection to free
DEVICES = ("auto", "cpu", "cuda")
DTYPES = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(eq=False)
class LoadedModel:
    """A causal LM ready to score: ``model`` is in eval mode on ``device``.

    ``key`` is unique per load, so caches keyed by it never mix two models under one name.
    """

    name: str
    source: str
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    card: ModelCard
    identity: str = ""  # loaders.source_identity(source) at load time
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    pinned: bool = False  # loaded by the user: evicted only to make room for the user's

    @classmethod
    def in_memory(cls, name: str, model: torch.nn.Module, tokenizer) -> LoadedModel:
        """A model being trained, as the scoring engine takes it: put in eval mode, on the
        device of its weights, described as if saved (safetensors), never registered."""
        return cls(name, name, model.eval(), tokenizer, next(model.parameters()).device,
                   describe(model, tokenizer, file_format="safetensors"))


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` is CUDA when present, else CPU; asking for CUDA without one is a ``UserError``."""
    if device not in DEVICES:
        raise UserError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("device 'cuda' asked for, but no CUDA GPU is available: use 'cpu' or 'auto'")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on a CUDA GPU that supports it (same range as float32), else float32."""
    if dtype not in DTYPES:
        raise UserError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def default_name(source: str) -> str:
    """A short name for a source: built-ins keep theirs, paths give their stem (other characters
    than ``NAME_CHARACTERS`` become "-")."""
    if source in BUILTIN_SOURCES:
        return source
    path = Path(source.strip()).expanduser()
    stem = path.stem if path.exists() else source.strip()
    return re.sub(rf"[^{NAME_CHARACTERS}]+", "-", stem)[:MAX_NAME] or "model"


def check_name(name: str) -> None:
    """A ``UserError`` unless ``name`` is 1..64 of ``NAME_CHARACTERS``: a model's name is shown
    on every page, so it must never carry markup (a link or an image for every viewer); and
    unless no one can take it for a built-in's (``core.models.names``: NFKC, one script, no
    lookalike of a built-in source such as ``smollm2``)."""
    if not re.fullmatch(rf"[{NAME_CHARACTERS}]{{1,{MAX_NAME}}}", name):
        raise UserError(f"model names are 1 to {MAX_NAME} letters, digits and . _ - : / + @, "
                        f"not {name[:80]!r}")
    check_lookalike(name, BUILTIN_SOURCES)


@dataclass(frozen=True)
class Eviction:
    """A model the registry unloaded to make room, and why (shown to the user)."""

    name: str
    source: str
    why: str


class ModelRegistry:
    """Loaded models by name, in two kinds of ``capacity`` each: those the user loaded
    (``pinned``) and those pages load on their own. When a kind is full, its least recently used
    model is evicted: one kind never evicts the other (two uploads leave a page the room for the
    demo's two models). ``evictions`` holds the latest evictions, newest last."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._models: OrderedDict[str, LoadedModel] = OrderedDict()
        self.lock = threading.RLock()
        self.evictions: deque[Eviction] = deque(maxlen=20)
        self.evicted = 0  # evictions ever made: ``evictions_since`` counts from it

    def get(self, name: str) -> LoadedModel | None:
        with self.lock:
            lm = self._models.get(name)
            if lm is not None:
                self._models.move_to_end(name)
            return lm

    def victim(self, name: str, pin: bool = False) -> LoadedModel | None:
        """The model that ``name``, of the user's (``pin``) or a page's own, would evict now:
        the least recently used other model of its kind when the kind is full, else None."""
        with self.lock:
            kind = [lm for lm in self._models.values() if lm.pinned == pin and lm.name != name]
            return kind[0] if len(kind) >= self.capacity else None

    def make_room(self, name: str, pin: bool = False) -> None:
        """Evict (``victim``) until ``name``, of its kind, fits, recording each eviction."""
        with self.lock:
            while self._evict_one(name, pin):
                pass

    def pin(self, lm: LoadedModel) -> None:
        """Count ``lm`` among the user's models from now on, making room for it there."""
        with self.lock:
            lm.pinned = True
            self.make_room(lm.name, pin=True)

    def _evict_one(self, name: str, pin: bool) -> bool:
        """Evict ``victim(name, pin)``, recording why; False when there is none. No reference to
        it outlives the call, so its memory is released now."""
        lm = self.victim(name, pin)
        if lm is None:
            return False
        which = "models you loaded" if pin else "models that pages load on their own (yours aside)"
        self.evictions.append(Eviction(lm.name, lm.source, (
            f"unloaded to make room for {name}: at most {self.capacity} {which} stay loaded, "
            "and it was the one of them used least recently")))
        self.evicted += 1
        victim = lm.name
        del lm
        return self.remove(victim)

    def evictions_since(self, count: int) -> list[Eviction]:
        """The evictions made after ``evicted`` was ``count`` (those still remembered)."""
        with self.lock:
            new = min(self.evicted - count, len(self.evictions))
            return list(self.evictions)[len(self.evictions) - new:] if new > 0 else []

    def put(self, lm: LoadedModel) -> None:
        with self.lock:
            self.remove(lm.name)
            self.make_room(lm.name, lm.pinned)
            self._models[lm.name] = lm

    def remove(self, name: str) -> bool:
        """Forget ``name`` and release its memory; False when it was not loaded."""
        with self.lock:
            lm = self._models.pop(name, None)
        if lm is None:
            return False
        device, weights = lm.device, weakref.ref(lm.model)
        held = lm.card.memory_bytes
        del lm
        if weights() is not None and held >= COLLECT_BYTES:
            gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return True

    def names(self) -> list[str]:
        with self.lock:
            return list(self._models)

    def models(self) -> list[LoadedModel]:
        with self.lock:
            return list(self._models.values())

    def clear(self) -> None:
        for name in self.names():
            self.remove(name)
        self.evictions.clear()


_REGISTRY = ModelRegistry()
_LOADING = threading.Lock()  # one load at a time: two pages asking for one model load it once


def default_registry() -> ModelRegistry:
    """The registry shared by everything in this process."""
    return _REGISTRY


def load_model(
    source: str,
    *,
    name: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    registry: ModelRegistry | None = None,
    pin: bool = False,
) -> LoadedModel:
    """Load ``source`` (see ``core.models.loaders``), register it as ``name`` and return it;
    ``pin``: the user loaded it (``ModelRegistry``: among the user's models).

    A model already registered under ``name`` from the same source, device and dtype is
    returned as is (pinned if ``pin``); otherwise it is replaced. Built-in names are reserved
    for their own models. Bad input raises ``UserError``.
    """
    registry = registry or _REGISTRY
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    name = (name or "").strip() or default_name(source)
    check_name(name)
    if name in BUILTIN_SOURCES and source.strip() != name:
        raise UserError(f"{name!r} is the name of a built-in model: load {source!r} under "
                        "another name, so that no page takes one for the other")
    with _LOADING:
        identity = source_identity(source)
        current = _still_current(registry.get(name), identity, torch_device, torch_dtype)
        if current is not None:
            if pin and not current.pinned:
                registry.pin(current)
            return current
        if torch_device.type == "cuda":  # GPU memory is tight: evict before loading, not after
            registry.remove(name)
            registry.make_room(name, pin)
        model, tokenizer, file_format = load_source(source, dtype=torch_dtype)
        try:
            if torch_device.type == "cuda":
                limits.check_fits_on_gpu(torch_device, model_bytes(model), source)
            model = model.to(torch_device)
        except torch.OutOfMemoryError:
            del model
            raise UserError(f"not enough memory on {torch_device} for {source}: unload a model "
                            "or pick the CPU") from None
        lm = LoadedModel(name, source, model, tokenizer, torch_device,  # a hub id: files now
                         describe(model, tokenizer, file_format=file_format),
                         identity or source_identity(source), pinned=pin)
        registry.put(lm)
        return lm


def _still_current(lm: LoadedModel | None, identity: str, device: torch.device,
                   dtype: torch.dtype) -> LoadedModel | None:
    """``lm`` if it was loaded from ``identity`` on ``device`` in ``dtype``, else None; so that
    the caller keeps no reference to a model it replaces (which would keep its weights in memory
    while the replacement loads)."""
    if (lm is not None and lm.identity == identity and lm.device == device
            and lm.card.dtype == str(dtype).removeprefix("torch.")):
        return lm
    return None


def get_model(name: str, registry: ModelRegistry | None = None) -> LoadedModel:
    """The model loaded under ``name``; ``UserError`` when there is none."""
    lm = (registry or _REGISTRY).get(name)
    if lm is None:
        raise UserError(f"no model is loaded under the name {name!r}: load it first "
                        "(Models page, or `python -m core models load SOURCE --name NAME`)")
    return lm


def resolve_model(name_or_source: str, *, device: str = "auto") -> LoadedModel:
    """A loaded model by name, else ``name_or_source`` loaded as a source (what attacks call).

    A loaded model is loaded again from its source, under its name, when that source now names
    something else (a rebuilt demo, a replaced file) or when ``device`` ("cpu" or "cuda") is not
    where it is loaded: the copy elsewhere is never handed back (whoever still holds it keeps
    it; it is never moved under them). "auto" takes the loaded model wherever it is. "cuda"
    without a GPU, or a source that cannot be loaded again, is a ``UserError``.
    """
    loaded = _REGISTRY.get(name_or_source.strip())
    if loaded is None:
        return load_model(name_or_source, device=device)
    where = loaded.device.type if device == "auto" else device
    if loaded.identity == source_identity(loaded.source) and loaded.device.type == where:
        return loaded
    source, name, pin = loaded.source, loaded.name, loaded.pinned
    del loaded   # the copy being replaced: this frame must not keep its weights in memory
    return load_model(source, name=name, device=where, pin=pin)


def unload_model(name: str) -> bool:
    """Drop the model loaded under ``name``; False when there was none."""
    return _REGISTRY.remove(name)


def loaded_models() -> list[LoadedModel]:
    """The loaded models, least recently used first."""
    return _REGISTRY.models()
