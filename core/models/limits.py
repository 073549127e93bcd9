"""Every resource limit of model loading, uploads and the private storage, in one place.

An operator raises (or lowers) a limit with its environment variable, read each time the limit
is checked:

======================================  ==============  ==================================================
variable                                default         what it bounds
======================================  ==============  ==================================================
``LEAKAGE_LAB_MAX_PARAMS``              10,000,000,000  parameters a model's config may imply (8B models fit)
``LEAKAGE_LAB_MAX_CONFIG_BYTES``        1 MiB           ``config.json`` / ``generation_config.json``
``LEAKAGE_LAB_MAX_TOKENIZER_BYTES``     16 MiB          each tokenizer file (``tokenizer.json``, ``vocab.json``,
                                                        ``merges.txt``, ``tokenizer.model``, ...); Gemma's
                                                        33 MB ``tokenizer.json`` needs it raised
``LEAKAGE_LAB_MAX_ZIP_BYTES``           4 GiB           what one zip may unpack to (twice the 2 GB upload
                                                        limit of ``.streamlit/config.toml``: weights
                                                        barely compress)
``LEAKAGE_LAB_MAX_ZIP_FILES``           1000            files in one zip
``LEAKAGE_LAB_MIN_FREE_BYTES``          1 GiB           disk kept free by uploads and extractions
``LEAKAGE_LAB_STORAGE_BYTES``           8 GiB           uploads + extracted zips kept; beyond it the least
                                                        recently used are deleted
``LEAKAGE_LAB_MAX_GGUF_METADATA``       1000            metadata key/value pairs of a GGUF (real: 30-60)
``LEAKAGE_LAB_MAX_GGUF_ARRAY_ITEMS``    1,000,000       items of a GGUF's metadata arrays together (a
                                                        262k-token vocabulary with scores and types:
                                                        ~790k); the parsers take ~1 KB of memory each
``LEAKAGE_LAB_MAX_GGUF_ARRAY_LENGTH``   300,000         items of one metadata array (the largest real:
                                                        Llama-3's 280,147 merges; Gemma-3's 262,144
                                                        tokens); transformers' parser takes ~2 KB each
``LEAKAGE_LAB_MAX_GGUF_STRING_BYTES``   32 MiB          bytes of a GGUF's metadata strings together
``LEAKAGE_LAB_MAX_GGUF_TENSORS``        65,536          tensors a GGUF declares
======================================  ==============  ==================================================

Besides, a model must fit in the memory available now (``psutil``): its parameters and buffers
in the dtype asked for. Fixed limits (no variable: real files stay far below them) are the
constants below.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.errors import UserError
from core.limits import Limit, human_bytes  # noqa: F401 (re-exported: limits.human_bytes)

MAX_LAYERS = 1024  # num_hidden_layers (the largest models have ~130); the check model has one module each
MAX_EXPERTS = 4096  # num_experts and its aliases (MoE models have up to ~512)
MAX_HEADER_BYTES = 16 * 2**20  # a safetensors header or index (an 8B model's is ~30 KB)
MAX_MEMBER_RATIO = 200  # uncompressed / compressed size of one zip member above 1 MiB
MEMBER_RATIO_ABOVE = 2**20  # small files (json) may compress well
MAX_ARCHIVE_RATIO = 20  # the same for a whole zip above 32 MiB: weights compress ~1.1-2:1
ARCHIVE_RATIO_ABOVE = 32 * 2**20


MAX_PARAMS = Limit("LEAKAGE_LAB_MAX_PARAMS", 10_000_000_000)
MAX_CONFIG_BYTES = Limit("LEAKAGE_LAB_MAX_CONFIG_BYTES", 2**20)
MAX_TOKENIZER_BYTES = Limit("LEAKAGE_LAB_MAX_TOKENIZER_BYTES", 16 * 2**20)
MAX_ZIP_BYTES = Limit("LEAKAGE_LAB_MAX_ZIP_BYTES", 4 * 2**30)
MAX_ZIP_FILES = Limit("LEAKAGE_LAB_MAX_ZIP_FILES", 1000)
MIN_FREE_BYTES = Limit("LEAKAGE_LAB_MIN_FREE_BYTES", 2**30)
STORAGE_BYTES = Limit("LEAKAGE_LAB_STORAGE_BYTES", 8 * 2**30)
# A GGUF's header, counted before any parser reads it (``core.models.gguf_header``); SmolLM2-135M
# has 33 keys, 147,205 array items, 0.8 MB of strings and 272 tensors.
MAX_GGUF_METADATA = Limit("LEAKAGE_LAB_MAX_GGUF_METADATA", 1000)
MAX_GGUF_ARRAY_ITEMS = Limit("LEAKAGE_LAB_MAX_GGUF_ARRAY_ITEMS", 1_000_000)
MAX_GGUF_ARRAY_LENGTH = Limit("LEAKAGE_LAB_MAX_GGUF_ARRAY_LENGTH", 300_000)
MAX_GGUF_STRING_BYTES = Limit("LEAKAGE_LAB_MAX_GGUF_STRING_BYTES", 32 * 2**20)
MAX_GGUF_TENSORS = Limit("LEAKAGE_LAB_MAX_GGUF_TENSORS", 65_536)


def check_file_size(path: Path, limit: Limit) -> None:
    """A ``UserError`` when the file ``path`` is larger than ``limit`` allows."""
    size, allowed = path.stat().st_size, limit.get()
    if size > allowed:
        raise UserError(f"{path.name} is {human_bytes(size)}, more than the {human_bytes(allowed)} "
                        f"allowed: refused before reading it ({limit.hint()})")


def available_memory() -> int:
    """Bytes of RAM the system can give now without swapping (``psutil``, which accelerate needs)."""
    import psutil

    return int(psutil.virtual_memory().available)


def check_fits_on_gpu(device, needed: int, what: str) -> None:
    """A ``UserError`` when ``needed`` bytes exceed the free memory of the CUDA ``device`` now
    (``torch.cuda.mem_get_info``): asked before the weights are moved there, so a model too
    large for the card is refused with its size instead of failing halfway through the copy."""
    import torch

    free, total = torch.cuda.mem_get_info(device)
    if needed > free:
        raise UserError(f"{what} needs {human_bytes(needed)} of GPU memory, but {device} has "
                        f"{human_bytes(free)} free of {human_bytes(total)}: unload a model, pick "
                        "a smaller dtype, or use the CPU")


def free_disk_budget(folder: Path) -> int:
    """Bytes that may still be written under ``folder``, keeping ``MIN_FREE_BYTES`` free."""
    return shutil.disk_usage(folder).free - MIN_FREE_BYTES.get()


def check_free_disk(folder: Path, needed: int, what: str) -> None:
    """A ``UserError`` when writing ``needed`` bytes under ``folder`` would leave less than
    ``MIN_FREE_BYTES`` of disk free."""
    budget = free_disk_budget(folder)
    if needed > budget:
        raise UserError(f"{what} needs {human_bytes(needed)} of disk, but only "
                        f"{human_bytes(max(budget, 0))} may be used (keeping "
                        f"{human_bytes(MIN_FREE_BYTES.get())} free; {MIN_FREE_BYTES.hint('lower')})")
