"""LoRA adapters (PEFT): ``adapter_config.json`` + ``adapter_model.safetensors`` merged into their
base model, so that an adapter is an ordinary transformers causal LM for every attack.

``core.models.loaders`` finds the adapter (a folder, a ``.zip`` of one, ``ADAPTER@BASE``) and loads
the base as any source; this module checks the adapter and merges it (Hu et al., *LoRA*, 2021):
every adapted layer's weight becomes W' = W + s·B·A, with s = α/r (α/√r for rsLoRA), once, by
PEFT's ``merge_and_unload``. Merged rather than kept as a ``PeftModel``: scoring then runs at the
base's speed (no low-rank products in every adapted layer of every forward pass) in the base's
memory (the factors are dropped), and generation, the KV-cache seam and every attack see a plain
transformers model. The price: the base is not kept inside it (the reference is loaded on its
own), and in bfloat16 W' is rounded once, as a merged checkpoint would be; in float32 scores match
the unmerged ``PeftModel`` to ~1e-6. Tied input and output embeddings are untied first when the
adapter changes either (merged into the one shared tensor, the delta would apply to both).

Safety, for an adapter that may be hostile:

- weights are safetensors only: a pickled ``adapter_model.bin`` is refused, never read; the
  header is checked (``checks.tensor_shapes``) and the file must fit in the memory available;
- only LoRA (with DoRA, rsLoRA) is taken, from a config rebuilt from a few known fields: the layers
  adapted and their ranks are read from the weights' names and shapes, never from the config's
  patterns (regular expressions could take unbounded time), and initialisations that rewrite the
  base's weights (PiSSA, OLoRA, ...) are refused;
- the adapter's tensors are made on the meta device and take the file's (``low_cpu_mem_usage``),
  so nothing is allocated beyond the file; a tensor missing, unexpected or not finite after the
  merge is refused by name (``checks.check_loaded``); no remote code, no download.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
import warnings
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import torch

from core.errors import UserError
from core.fingerprint import MODEL_FILE_SUFFIXES
from core.models import limits
from core.models.archive import private_dir
from core.models.checks import LOAD_ERRORS, check_loaded, short, tensor_shapes

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PICKLED_WEIGHTS = ("adapter_model.bin", "adapter_model.pt", "adapter_model.pth", "adapter_model.ckpt")
# The tensor that gives an adapted layer's rank r: lora_A (r x in) or lora_embedding_A (r x vocab).
RANK_TENSOR = re.compile(r"base_model\.model\.(?P<layer>.+)\.(?:lora_A\.weight|lora_embedding_A)")
KEPT_FIELDS = ("lora_alpha", "use_rslora", "use_dora", "lora_bias", "fan_in_fan_out", "bias",
               "modules_to_save", "alpha_pattern")
PLAIN_INITS = (True, False, "gaussian", "eva")  # initialisations that leave the base's weights alone
TASKS = (None, "CAUSAL_LM")
PLAIN_NAME = re.compile(r"[\w.\-]+")  # a layer name: no regular-expression operator


def is_adapter_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding an ``adapter_config.json``."""
    return path.is_dir() and (path / ADAPTER_CONFIG).is_file()


def find_adapter_folder(root: Path) -> Path | None:
    """The shallowest folder under ``root`` (an extracted zip) holding an adapter, if any."""
    configs = sorted(root.rglob(ADAPTER_CONFIG), key=lambda p: (len(p.parts), str(p)))
    return configs[0].parent if configs else None


def recorded_base(path: Path) -> str | None:
    """``base_model_name_or_path`` of the adapter in the folder or ``.zip`` ``path`` (a zip's
    config is read without extracting it); None when ``path`` holds no adapter or it records no base."""
    if is_adapter_folder(path):
        raw = _folder_config(path, path.name)
    elif path.is_file() and path.suffix.lower() == ".zip":
        data = _zipped_config(path)
        if data is None:
            return None
        raw = _parse_config(data, path.name)
    else:
        return None
    base = raw.get("base_model_name_or_path")
    return base.strip() if isinstance(base, str) and base.strip() else None


def _zipped_config(path: Path) -> bytes | None:
    """The shallowest ``adapter_config.json`` of a zip (at most ``MAX_CONFIG_BYTES`` read)."""
    allowed = limits.MAX_CONFIG_BYTES.get()
    try:
        with zipfile.ZipFile(path) as zf:
            members = [i for i in zf.infolist() if PurePosixPath(i.filename).name == ADAPTER_CONFIG]
            if not members:
                return None
            info = min(members, key=lambda i: (len(PurePosixPath(i.filename).parts), i.filename))
            with zf.open(info) as member:
                data = member.read(allowed + 1)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, zlib.error) as err:  # (encrypted)
        raise UserError(f"{path.name} is not a readable zip file ({short(err)})") from None
    if len(data) > allowed:
        raise UserError(f"the {ADAPTER_CONFIG} in {path.name} is larger than "
                        f"{limits.human_bytes(allowed)}: refused ({limits.MAX_CONFIG_BYTES.hint()})")
    return data


def _folder_config(folder: Path, what: str) -> dict:
    limits.check_file_size(folder / ADAPTER_CONFIG, limits.MAX_CONFIG_BYTES)
    return _parse_config((folder / ADAPTER_CONFIG).read_bytes(), what)


def _parse_config(data: bytes, what: str) -> dict:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:   # nested too deeply
        raise UserError(f"the {ADAPTER_CONFIG} of {what} is not valid JSON ({short(err)})") from None
    if not isinstance(raw, dict):
        raise UserError(f"the {ADAPTER_CONFIG} of {what} is not a JSON object")
    return raw


def read_adapter(folder: Path, what: str):
    """``(LoraConfig, stored tensor shapes)`` of the adapter in ``folder`` (``what`` names it in
    messages), checked as the module docstring says, before anything is allocated for it."""
    raw = _folder_config(folder, what)
    peft_type, task = raw.get("peft_type"), raw.get("task_type")
    if peft_type != "LORA":
        raise UserError(f"{what} is a {peft_type} adapter: only LoRA adapters (with DoRA or rsLoRA) "
                        "can be merged into their base here")
    if task not in TASKS:
        raise UserError(f"{what} is a {task} adapter, not a causal language model's (CAUSAL_LM)")
    if raw.get("init_lora_weights", True) not in PLAIN_INITS:
        raise UserError(f"{what} was initialised with {raw['init_lora_weights']!r}, which rewrites "
                        "the base's weights: convert it to a plain LoRA first (PEFT's save_pretrained "
                        "with path_initial_model_for_weight_conversion)")
    shapes = tensor_shapes([_weights_file(folder, what)])
    ranks = {m["layer"]: shape[0] for key, shape in shapes.items()
             if (m := RANK_TENSOR.fullmatch(key)) and shape}
    if not ranks:
        raise UserError(f"{what}: {ADAPTER_WEIGHTS} holds no LoRA weights (lora_A)")
    return _lora_config(raw, ranks, what), shapes


def _weights_file(folder: Path, what: str) -> Path:
    """The adapter's safetensors (fitting in memory); a pickled one is refused unread."""
    weights = folder / ADAPTER_WEIGHTS
    if not weights.is_file():
        if any((folder / name).is_file() for name in PICKLED_WEIGHTS):
            raise UserError(
                f"{what} holds a pickled adapter (adapter_model.bin): loading it could run arbitrary "
                "code, so it is refused. Save the adapter with safetensors where you trust it "
                "(peft_model.save_pretrained(folder, safe_serialization=True)) and load that folder.")
        raise UserError(f"{what} has no {ADAPTER_WEIGHTS}")
    size, available = weights.stat().st_size, limits.available_memory()
    if size > available:
        raise UserError(f"{what}: {ADAPTER_WEIGHTS} is {limits.human_bytes(size)}, more than the "
                        f"{limits.human_bytes(available)} of memory available: free memory")
    return weights


def _lora_config(raw: dict, ranks: dict[str, int], what: str):
    """A ``LoraConfig`` of ``raw``'s ``KEPT_FIELDS``, adapting exactly the layers of ``ranks``
    with their ranks (escaped: PEFT reads rank patterns as regular expressions)."""
    from peft import LoraConfig

    kept = {name: raw[name] for name in KEPT_FIELDS if raw.get(name) is not None}
    alphas, saved = kept.get("alpha_pattern", {}), kept.get("modules_to_save", [])
    if not (isinstance(alphas, dict) and isinstance(saved, list)
            and all(isinstance(name, str) and PLAIN_NAME.fullmatch(name) for name in [*alphas, *saved])):
        raise UserError(f"{what}: alpha_pattern and modules_to_save must name layers (letters, "
                        "digits, . _ -), not regular expressions")
    try:
        return LoraConfig(r=min(ranks.values()), target_modules=sorted(ranks), inference_mode=True,
                          rank_pattern={re.escape(layer): r for layer, r in ranks.items()}, **kept)
    except LOAD_ERRORS as err:
        raise UserError(f"{what}: not a valid LoRA {ADAPTER_CONFIG} ({short(err)})") from None


def merge_adapter(model: torch.nn.Module, folder: Path, config, shapes: dict,
                  what: str) -> torch.nn.Module:
    """``model`` (the base, on the CPU, modified in place) with the adapter in ``folder`` merged in."""
    from peft import PeftModel

    _untie_adapted_embeddings(model, set(config.target_modules))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PEFT warns of missing tensors: refused below by name
            peft_model = PeftModel.from_pretrained(model, folder, config=config, low_cpu_mem_usage=True,
                                                   torch_device="cpu")
    except LOAD_ERRORS as err:
        raise UserError(f"the adapter {what} does not fit its base model (made for another "
                        f"architecture or size?): {short(err)}") from None
    report = _key_report(peft_model, set(shapes))
    if report["missing_keys"] or report["unexpected_keys"]:
        check_loaded(peft_model, report)  # refuses, naming them
    merged = peft_model.merge_and_unload()
    check_loaded(merged, report)  # every merged weight finite
    return merged.eval()


def _untie_adapted_embeddings(model: torch.nn.Module, adapted: set[str]) -> None:
    """Give the output layer its own copy of the input embeddings when they are one tied tensor
    and the adapter changes either: merged into a shared tensor, its delta would reach both."""
    inputs, outputs = model.get_input_embeddings(), model.get_output_embeddings()
    if outputs is None or outputs.weight is not inputs.weight:
        return
    names = {name for name, module in model.named_modules() if module in (inputs, outputs)}
    if names & adapted:
        outputs.weight = torch.nn.Parameter(inputs.weight.detach().clone())
        model.config.tie_word_embeddings = False


def _key_report(peft_model, stored: set[str]) -> dict:
    """``check_loaded``'s report of the adapter tensors PEFT expects vs those the file holds."""
    from peft.utils import get_peft_model_state_dict

    expected = set(get_peft_model_state_dict(peft_model, save_embedding_layers=False))
    # PEFT also saves the base weights of an adapted embedding layer (for a resized vocabulary)
    optional = set(get_peft_model_state_dict(peft_model, save_embedding_layers=True)) - expected
    return {"missing_keys": expected - stored, "unexpected_keys": stored - expected - optional,
            "mismatched_keys": set(), "error_msgs": []}


def weights_view(adapter: Path, base: Path) -> Path:
    """A private folder of links to the adapter's and the base's weight, config and tokenizer files:
    the merged model's ``name_or_path``. The score disk cache (``core.scoring.cache``) hashes the
    files there, so an adapter's scores are keyed on both and never mixed with its base's."""
    links = {f"{role}-{file.name}": file.resolve()
             for role, folder in (("adapter", adapter), ("base", base))
             for file in sorted(folder.iterdir())
             if file.suffix in MODEL_FILE_SUFFIXES and file.is_file()}
    key = hashlib.sha256(json.dumps(sorted((k, str(v)) for k, v in links.items())).encode())
    view = private_dir("models", "adapters") / key.hexdigest()[:16]
    if not view.is_dir():
        staging = private_dir("models", "adapters", f".partial-{uuid.uuid4().hex}")
        for name, target in links.items():
            (staging / name).symlink_to(target)
        try:
            staging.rename(view)
        except OSError:  # made meantime by another load, with the same links
            shutil.rmtree(staging, ignore_errors=True)
    return view

