"""Checks around transformers' loading: nothing is allocated for a checkpoint that does not match
its config, and no randomly initialised or non-finite weight is ever served.

Before loading (``check_folder``), reading no weight:

1. config and tokenizer files are within their size limits (``core.models.limits``);
2. the config's sizes are whole numbers >= 1 (``n_layer: -1`` would give a model with no layers),
   with at most ``MAX_LAYERS`` layers and ``MAX_EXPERTS`` experts;
3. the model the config describes is built on the meta device (shapes only, no memory) and
   counted: at most ``MAX_PARAMS`` parameters, and parameters x bytes per element + buffers
   must fit in the memory available now;
4. the safetensors headers (8-byte length, then JSON; no tensor data) hold every tensor that model
   expects with its shape, and no other, read the way transformers reads them (renamings,
   base-model prefix, tied weights stored once, the model's ignore lists).

After loading (``check_loaded``): transformers' loading info reports nothing missing, unexpected or
mismatched, and every parameter is finite.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError, safe_open

from core.errors import UserError
from core.models import limits
from core.models.gguf_header import read_header

CONFIG_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "vocab.json", "vocab.txt",
                   "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "chat_template.jinja", "chat_template.json")
WEIGHTS_FILE, INDEX_FILE = "model.safetensors", "model.safetensors.index.json"
# Sizes every text config has (GPT-2's n_layer etc. are aliases), with their allowed range.
CONFIG_RANGES = {
    "vocab_size": (1, None), "hidden_size": (1, None), "num_attention_heads": (1, None),
    "num_key_value_heads": (1, None), "max_position_embeddings": (1, None),
    "num_hidden_layers": (1, limits.MAX_LAYERS), "num_experts": (0, limits.MAX_EXPERTS),
    "num_local_experts": (0, limits.MAX_EXPERTS), "n_routed_experts": (0, limits.MAX_EXPERTS),
}
LOAD_ERRORS = (OSError, ValueError, RuntimeError, KeyError, TypeError, AttributeError, EOFError,
               ArithmeticError, SafetensorError, StrictDataclassError)
SHOWN = 3  # tensors named in a message


def short(err: BaseException) -> str:
    """An error's message on one line (at most 300 characters)."""
    return (" ".join(line.strip() for line in str(err).splitlines()).strip()
            or type(err).__name__)[:300]


def check_folder(folder: Path, *, dtype: torch.dtype) -> None:
    """Refuse a model folder whose files, config or weights' headers are out of bounds or
    inconsistent, before transformers allocates anything for it."""
    check_file_sizes(folder)
    config = read_config(folder)
    model = meta_model(config)
    check_model_size(model, dtype)
    check_checkpoint_matches(model, tensor_shapes(weight_files(folder)))


def check_file_sizes(folder: Path) -> None:
    """Config and tokenizer files within ``MAX_CONFIG_BYTES`` / ``MAX_TOKENIZER_BYTES``: the
    tokenizer libraries use ~70x a file's size in memory."""
    for names, limit in ((CONFIG_FILES, limits.MAX_CONFIG_BYTES),
                         (TOKENIZER_FILES, limits.MAX_TOKENIZER_BYTES)):
        for name in names:
            if (folder / name).is_file():
                limits.check_file_size(folder / name, limit)


def check_gguf(path: Path) -> None:
    """A GGUF whose metadata describe a model within the limits (in float32: it is de-quantised)
    that the file's tensors can fill (a tied weight is stored once)."""
    from gguf import GGUFReader

    model = meta_model(read_config(path.parent, gguf_file=str(path)))
    check_model_size(model, torch.float32)
    stored = sum(int(tensor.n_elements) for tensor in GGUFReader(path).tensors)
    implied = parameter_count(model)
    if implied > stored:
        raise UserError(f"{path.name} holds {stored:,} weights, but its metadata describe a model "
                        f"of {implied:,}: refused (a truncated or inconsistent GGUF)")


def read_config(folder: Path, **kwargs):
    """The folder's (or with ``gguf_file=``, a GGUF's) config, its sizes checked (a GGUF's
    header counted first: ``core.models.gguf_header``)."""
    from transformers import AutoConfig

    if kwargs.get("gguf_file"):
        read_header(Path(folder) / kwargs["gguf_file"])  # as transformers joins them
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False, local_files_only=True,
                                            **kwargs)
    except LOAD_ERRORS as err:
        name = Path(kwargs.get("gguf_file", folder)).name
        raise UserError(f"could not read the config of {name}: {short(err)}") from None
    check_config_values(config)
    return config


def check_config_values(config) -> None:
    """A ``UserError`` for a size of ``CONFIG_RANGES`` that is not a whole number in its range."""
    text_config = config.get_text_config()
    for name, (low, high) in CONFIG_RANGES.items():
        value = getattr(text_config, name, None)
        if value is None:
            continue
        valid = isinstance(value, int) and not isinstance(value, bool)
        if not valid or value < low or (high is not None and value > high):
            allowed = f"from {low} to {high:,}" if high is not None else f"of at least {low}"
            raise UserError(f"the config's {name} must be a whole number {allowed}, not {value!r}")


def meta_model(config) -> torch.nn.Module:
    """The causal LM ``config`` describes, built on the meta device: shapes, no memory."""
    from transformers import AutoModelForCausalLM

    try:
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    except LOAD_ERRORS as err:
        raise UserError(f"the config does not describe a causal LM transformers can build: "
                        f"{short(err)}") from None


def parameter_count(model: torch.nn.Module) -> int:
    """Parameters, a tied one counted once (``parameters()`` skips repeats)."""
    return sum(p.numel() for p in model.parameters())


def model_bytes(model: torch.nn.Module, dtype: torch.dtype | None = None) -> int:
    """Bytes of ``model``'s parameters (in ``dtype``; None: their own) and buffers."""
    params = sum(p.numel() * (dtype.itemsize if dtype else p.element_size())
                 for p in model.parameters())
    return params + sum(b.numel() * b.element_size() for b in model.buffers())


def check_model_size(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """At most ``MAX_PARAMS`` parameters, and parameters in ``dtype`` plus buffers fit in the
    memory available now."""
    params, allowed = parameter_count(model), limits.MAX_PARAMS.get()
    if params > allowed:
        raise UserError(f"the config describes a model of {params:,} parameters, more than the "
                        f"{allowed:,} allowed ({limits.MAX_PARAMS.hint()})")
    needed = model_bytes(model, dtype)
    available = limits.available_memory()
    if needed > available:
        raise UserError(f"the model needs {limits.human_bytes(needed)} of memory in "
                        f"{str(dtype).removeprefix('torch.')}, but only "
                        f"{limits.human_bytes(available)} is available: unload a model or free memory")


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files transformers would read: ``model.safetensors``, else the shards
    the index lists (plain file names of this folder only)."""
    if (folder / WEIGHTS_FILE).is_file():
        return [folder / WEIGHTS_FILE]
    index = folder / INDEX_FILE
    if not index.is_file():
        raise UserError(f"{folder.name} has no {WEIGHTS_FILE} (nor an {INDEX_FILE} of shards)")
    if index.stat().st_size > limits.MAX_HEADER_BYTES:
        raise UserError(f"{INDEX_FILE} is larger than {limits.human_bytes(limits.MAX_HEADER_BYTES)}: "
                        "refused")
    try:
        names = sorted(set(json.loads(index.read_text("utf-8"))["weight_map"].values()))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(f"{INDEX_FILE} is not a valid index ({short(err)})") from None
    files = [folder / str(name) for name in names]
    bad = [f.name for f in files if f.name != str(f.relative_to(folder)) or not f.is_file()]
    if bad:
        raise UserError(f"{INDEX_FILE} lists shards that are not files of the folder: {bad[:SHOWN]}")
    return files


def tensor_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor in ``files``, from their headers only (the header's length
    checked against ``MAX_HEADER_BYTES`` before it is read)."""
    shapes = {}
    for file in files:
        with open(file, "rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
        if length > limits.MAX_HEADER_BYTES:
            raise UserError(f"{file.name} declares a {limits.human_bytes(length)} header: corrupt "
                            "or hostile safetensors, refused")
        try:
            with safe_open(file, framework="pt") as weights:
                shapes |= {key: tuple(weights.get_slice(key).get_shape()) for key in weights.keys()}
        except LOAD_ERRORS as err:
            raise UserError(f"{file.name} is corrupt or incomplete safetensors: {short(err)}") from None
    return shapes


def check_checkpoint_matches(model: torch.nn.Module, shapes: dict[str, tuple[int, ...]]) -> None:
    """Refuse before loading when the checkpoint's tensors are not exactly those ``model`` expects."""
    report = checkpoint_report(model, shapes)
    _refuse_mismatch(report.missing_keys, report.unexpected_keys, report.mismatched_keys,
                     "refused before loading")


def checkpoint_report(model: torch.nn.Module, shapes: dict[str, tuple[int, ...]]):
    """transformers' ``LoadStateDictInfo`` for a checkpoint of these tensor shapes, computed as
    ``convert_and_load_state_dict_in_model`` matches names (renamings and converters, the
    base-model prefix), then with tied weights stored once and the model's ignore lists allowed.
    The seam on transformers' loading internals, pinned by tests/core/test_models_hardening.py."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key
    from transformers.utils.loading_report import LoadStateDictInfo

    expected = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    mapping = get_model_conversion_mapping(model)
    renamings = [m for m in mapping if isinstance(m, WeightRenaming)]
    converters = [m for m in mapping if isinstance(m, WeightConverter)]
    prefix = model.base_model_prefix
    present, unexpected, mismatched = set(), set(), set()
    for key, shape in shapes.items():
        target, converter = rename_source_key(key, renamings, converters, prefix, expected)
        if target not in expected and key in expected:
            target, converter = rename_source_key(key, [], [], prefix, expected)
        if target not in expected:
            unexpected.add(target)
            continue
        present.add(target)
        if converter is None and shape != expected[target]:  # a converter reshapes: not comparable
            mismatched.add((target, shape, expected[target]))
    for target, source in getattr(model, "all_tied_weights_keys", {}).items():
        if present & {target, source}:
            present |= {target, source}
    info = LoadStateDictInfo(missing_keys=set(expected) - present, unexpected_keys=unexpected,
                             mismatched_keys=mismatched, error_msgs=[], conversion_errors={},
                             skipped_pp_keys=set())
    model._adjust_missing_and_unexpected_keys(info)
    return info


def check_loaded(model: torch.nn.Module, info: dict) -> None:
    """Refuse a loaded model when transformers reports (``output_loading_info``) weights missing
    (it initialised them at random), unexpected or mismatched, or when a parameter holds NaN or
    infinity."""
    _refuse_mismatch(info["missing_keys"], info["unexpected_keys"], info["mismatched_keys"],
                     "refused")
    if info["error_msgs"]:
        raise UserError(f"the weights could not be loaded: {info['error_msgs'][0][:300]}")
    bad = [name for name, param in model.named_parameters() if not _finite(param)]
    if bad:
        raise UserError(f"{len(bad)} weight tensor(s) hold NaN or infinite values "
                        f"({_first(bad)}): a broken checkpoint, refused")


def _finite(param: torch.Tensor) -> bool:
    """Whether every value is finite. A NaN or infinity makes the float32 sum non-finite (15x
    faster than a test per value); only then (it may be an overflow) is each value tested."""
    with torch.no_grad():
        return bool(param.sum(dtype=torch.float32).isfinite()) or bool(torch.isfinite(param).all())


def _refuse_mismatch(missing, unexpected, mismatched, outcome: str) -> None:
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing ({_first(missing)})")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected ({_first(unexpected)})")
    if mismatched:
        shown = sorted(mismatched)[:SHOWN]
        problems.append(f"{len(mismatched)} of another shape (" + ", ".join(
            f"{name}: {tuple(stored)} stored, {tuple(wanted)} in the config"
            for name, stored, wanted in shown) + ("..." if len(mismatched) > SHOWN else "") + ")")
    if problems:
        raise UserError(f"the weights do not match the model's config: {'; '.join(problems)}: "
                        f"{outcome} (transformers would fill the gaps with random values)")


def _first(names) -> str:
    names = sorted(names)
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")
