"""Whether a job takes the GPU, from where its models are or will be (the GPU queue's rule).

A config's models are its ``path="model"`` fields. One loaded under that name is used where
``core.models.resolve_model`` takes it: where it is loaded for device "auto", else on the device
asked for; one not loaded yet is loaded on the config's device (``resolve_device``: "auto" is
CUDA when there is one). A config without a ``device`` field loads on "auto". A config that
names no model is left to its spec's ``uses_gpu``.
"""

from __future__ import annotations

from typing import Any

from core.errors import UserError
from core.specs import AttackSpec, path_fields


def model_names(config: Any) -> list[str]:
    """The models ``config`` names (its non-empty ``path="model"`` fields, tuples spread)."""
    names = []
    for field in path_fields(type(config), "model"):
        value = getattr(config, field.name)
        names += [v for v in (value if isinstance(value, tuple) else (value,))
                  if isinstance(v, str) and v.strip()]
    return names


def model_device(name: str, device: str, loaded: dict[str, str]) -> str:
    """The device type ("cpu", "cuda") model ``name`` will run on for a config asking for
    ``device``, given the loaded models' devices by name."""
    from core.models import resolve_device

    if device == "auto" and name.strip() in loaded:
        return loaded[name.strip()]
    try:
        return resolve_device(device).type
    except UserError:   # CUDA asked for, and none: the job fails on its own, off the GPU
        return "cpu"


def job_uses_gpu(spec: AttackSpec, config: Any) -> bool:
    """Whether a job of ``spec`` on ``config`` takes the GPU: one of its models is, or will be
    loaded, on it; for a config that names no model, what ``spec.uses_gpu`` says."""
    names = model_names(config)
    if not names:
        return spec.uses_gpu(config)
    from core.models import loaded_models

    loaded = {lm.name: lm.device.type for lm in loaded_models()}
    device = getattr(config, "device", "auto")
    return any(model_device(name, device, loaded) == "cuda" for name in names)
