"""A LoRA adapter's base as the reference by default.

The configs that compare a target with a reference (membership inference, extraction, user
inference, differential rank's ``before``, lazy risk's calibration, the audit) call
``reference_or_base`` in their ``__post_init__``, so that the CLI, the pages, the audit's
attacks and jobs all take the base when the target is an adapter and no reference is given.
"""

from __future__ import annotations

from core.errors import UserError
from core.models.loaders import adapter_base
from core.models.loaded import default_registry


def base_of(model: str) -> str | None:
    """The base of the LoRA adapter ``model`` names: a loaded model's name (its card) or a
    source (``loaders.adapter_base``: reads no weights); None for any other model."""
    model = model.strip()
    loaded = {lm.name: lm for lm in default_registry().models()}.get(model)
    if loaded is not None:
        return loaded.card.base
    try:
        return adapter_base(model) if model else None
    except (UserError, OSError, RuntimeError, ValueError):  # a path it may not read, a name too
        return None  # long, "~nobody/x": loading the model says what is wrong, when it runs


def reference_or_base(model: str, reference: str | None, *, unset: str | None = "") -> str | None:
    """``reference`` when it is given; else the base of the LoRA adapter ``model`` names; else
    ``reference`` as it was (no adapter). Not given: blank, or with ``unset=None`` only None
    (for a field where an empty string means "no reference": extraction's)."""
    given = reference is not None if unset is None else bool((reference or "").strip())
    return reference if given else (base_of(model) or reference)
