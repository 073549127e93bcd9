"""Hugging Face Hub ids: their shape, and their folders in the lab's hub cache, downloaded when
the hub is reachable (only safe files: json, safetensors, tokenizer; ``HF_HUB_OFFLINE`` and
``TRANSFORMERS_OFFLINE`` honoured). ``core.models.loaders`` loads the folder.

A page downloads only where the operator allows it (``$LEAKAGE_LAB_PAGE_HUB``), and every
download is checked first from the hub's metadata (``check_download``); each repository in the
cache is pruned like an upload (``core.models.archive.prune_private_storage``)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from core import paths
from core.errors import UserError
from core.models.archive import mark_used, private_dir, prune_private_storage
from core.models.checks import short

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# A name ending so is a file that is missing, not a hub id.
FILE_SUFFIXES = (".zip", ".gguf", ".safetensors", ".json", ".txt", *PICKLE_SUFFIXES)
PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "merges.txt"]
# Set to 1 by an operator to let a page (confined work) download from the hub.
PAGE_HUB_ENV = "LEAKAGE_LAB_PAGE_HUB"


def looks_like_hub_id(source: str) -> bool:
    """Whether ``source`` is shaped as a Hugging Face Hub id: ``name`` (``gpt2``) or
    ``owner/name`` (huggingface_hub's rules), and not a file name such as ``model.gguf``."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if source.startswith(".") or Path(source).suffix.lower() in FILE_SUFFIXES:
        return False
    try:
        validate_repo_id(source)
    except HFValidationError:
        return False
    return True


def hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("TRANSFORMERS_OFFLINE", "") in ("1", "true")


def snapshot(repo_id: str) -> Path | None:
    """The folder of ``repo_id`` in the lab's hub cache; None if it was never downloaded."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, allow_patterns=PATTERNS, local_files_only=True,
                                      cache_dir=private_dir("models", "hub")))
    except LocalEntryNotFoundError:
        return None


def check_download(info, cache: Path) -> None:
    """A ``UserError`` before a download that the limits refuse, from the hub's metadata alone:
    the files it would fetch (``PATTERNS``) larger than the upload limit or than the disk leaves
    free, or a model of more parameters than ``LEAKAGE_LAB_MAX_PARAMS``."""
    from fnmatch import fnmatch

    from core.models import limits

    wanted = sum(f.size or 0 for f in getattr(info, "siblings", None) or []
                 if any(fnmatch(f.rfilename.rsplit("/", 1)[-1], p) for p in PATTERNS))
    free = shutil.disk_usage(cache).free - limits.MIN_FREE_BYTES.get()
    cap = min(limits.MAX_ZIP_BYTES.get(), free)
    if wanted > cap:
        raise UserError(f"{info.id!r} would download {limits.human_bytes(wanted)}, above the "
                        f"{limits.human_bytes(max(cap, 0))} allowed (the upload limit and the "
                        f"disk's free space): {limits.MAX_ZIP_BYTES.hint()}")
    parameters = getattr(getattr(info, "safetensors", None), "total", None) or 0
    if parameters > limits.MAX_PARAMS.get():
        raise UserError(f"{info.id!r} has {parameters:,} parameters, above "
                        f"{limits.MAX_PARAMS.get():,}: {limits.MAX_PARAMS.hint()}")


def fetch(repo_id: str, *, timeout: float = 5.0) -> Path:
    """The folder of ``repo_id``: from the lab's hub cache, else downloaded when the hub is
    reachable, the limits allow it (``check_download``) and, for a page, the operator has set
    ``$LEAKAGE_LAB_PAGE_HUB``; a ``UserError`` saying why not otherwise."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError

    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    cache = private_dir("models", "hub")
    if (folder := snapshot(repo_id)) is not None:
        mark_used(_repository(folder, cache))   # pruned last among the lab's files
        return folder
    missing = (f"{repo_id!r} is a Hugging Face Hub id, but it is not in the local hub cache "
               f"({paths.shown(cache)})")
    instead = "load a local folder, zip or GGUF instead"
    if hub_offline():
        raise UserError(f"{missing} and the hub is off (HF_HUB_OFFLINE is set): {instead}")
    if paths.is_confined() and os.environ.get(PAGE_HUB_ENV, "") != "1":
        raise UserError(f"{missing}, and this server does not download from the hub for a page "
                        f"(an operator may set ${PAGE_HUB_ENV}=1): {instead}")
    try:
        check_download(HfApi().model_info(repo_id, timeout=timeout, files_metadata=True), cache)
        folder = Path(snapshot_download(repo_id, allow_patterns=PATTERNS, cache_dir=cache,
                                        etag_timeout=timeout))
    except UserError:
        raise
    except RepositoryNotFoundError:
        raise UserError(f"the Hugging Face Hub has no model {repo_id!r} (or it is private or gated): "
                        "check the id") from None
    except Exception as err:  # network errors come in many types; all mean "not reachable"
        raise UserError(f"{missing} and the hub could not be reached ({short(err)}): this "
                        f"machine may have no internet; {instead}") from None
    repository = _repository(folder, cache)
    mark_used(repository)
    prune_private_storage(keep=repository)
    return folder


def _repository(folder: Path, cache: Path) -> Path:
    """The cache's folder of one repository (``models--owner--name``) holding ``folder``."""
    return cache / folder.resolve().relative_to(cache.resolve()).parts[0]
