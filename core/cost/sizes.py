"""What a run's models and texts weigh, read without loading any weight.

A model's sizes come from its ``config.json`` (or a GGUF's metadata), built on the meta device
(``core.models.checks.meta_model``: shapes, no memory); for a model already loaded, from the
loaded model itself. They are cached on disk under the lab home, keyed by the config file's
path, size and modification time, so that a page's rerun costs nothing. A text's tokens come
from the model's tokenizer on a sample of the texts (4 characters a token where no tokenizer
file is at hand, e.g. a bare GGUF).
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core import paths, sources
from core.cost import disk_cache as store
from core.errors import UserError

CHARS_PER_TOKEN = 4.0      # English under a large BPE vocabulary, when no tokenizer is at hand
SAMPLE_TEXTS = 256         # texts tokenised to measure the tokens per character
MAX_ZIPPED_CONFIG = 2**20  # bytes of a config.json read from inside a zip


@dataclass(frozen=True)
class ModelSize:
    """A causal LM's sizes: what its forward pass multiplies and what its memory holds."""

    source: str
    parameters: int      # each tied weight once
    tables: int          # embedding-table weights: looked up, not multiplied
    head: int            # output-layer weights: multiplied for every token, even when tied
    width: int
    inner: int           # the MLP's width
    layers: int
    heads: int
    kv_width: int        # keys (or values) per token and layer
    vocab: int
    context: int
    tokenizer: str = ""  # a folder holding its tokenizer files ("" if none here)
    loaded: bool = False  # in the registry now: no load to pay

    def flops_per_token(self, length: float) -> float:
        """2 x the weights a token multiplies (all but the tables, the head counted even when
        tied), plus causal attention's 2 x 2 x (length / 2) x width per layer."""
        return (2 * (self.parameters - self.tables + self.head)
                + 2 * length * self.width * self.layers)


def _describe(model, source: str, tokenizer: str) -> dict:
    """The sizes of a transformers model (real or on the meta device)."""
    import torch

    from core.models.card import context_length
    from core.models.checks import parameter_count

    head = model.get_output_embeddings()
    text = model.config.get_text_config()
    heads = int(text.num_attention_heads)
    head_dim = getattr(text, "head_dim", None) or head.in_features // heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    return dict(
        source=source, parameters=parameter_count(model),
        tables=sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding)),
        head=head.weight.numel(), width=head.in_features,
        inner=(getattr(text, "intermediate_size", None) or getattr(text, "n_inner", None)
               or 4 * head.in_features),
        layers=int(text.num_hidden_layers), heads=heads, kv_width=int(kv_heads * head_dim),
        vocab=head.out_features, context=context_length(model), tokenizer=tokenizer)


def _file_key(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _from_config(key_file: Path, source: str, tokenizer: str, read) -> ModelSize:
    """Sizes of the config ``read()`` returns, cached on disk by ``key_file``'s identity."""
    key = _file_key(key_file)
    cached = store.get("models", key)
    if cached is None:
        from core.models.checks import meta_model

        cached = _describe(meta_model(read()), source, tokenizer)
        store.put("models", key, cached)
    return ModelSize(**cached | {"source": source, "tokenizer": tokenizer})


def _zipped(path: Path, source: str) -> ModelSize:
    """A zipped model folder's sizes from its ``config.json``, read without extracting."""
    from transformers import AutoConfig

    from core.models.checks import check_config_values

    with zipfile.ZipFile(path) as archive:
        names = sorted((n for n in archive.namelist() if Path(n).name == "config.json"),
                       key=lambda n: n.count("/"))
        if not names or archive.getinfo(names[0]).file_size > MAX_ZIPPED_CONFIG:
            raise UserError(f"{path.name}: no readable config.json, so its size is unknown")
        raw = json.loads(archive.read(names[0]))

    def read():
        config = AutoConfig.for_model(raw.pop("model_type", ""), **raw)
        check_config_values(config)
        return config
    return _from_config(path, source, "", read)


def _from_path(path: Path, source: str, base: str | None) -> ModelSize:
    from core.models import adapters
    from core.models.checks import read_config
    from core.models.loaders import TOKENIZER_FILES

    if adapters.is_adapter_folder(path) or (path.suffix.lower() == ".zip"
                                            and adapters.recorded_base(path)):
        recorded = base or adapters.recorded_base(path)
        if not recorded:
            raise UserError(f"the adapter {path.name} names no base: its size is unknown")
        return model_size(recorded)   # merged into its base: the base's sizes
    if path.is_dir() and (path / "config.json").is_file():
        tokenizer = str(path) if any((path / f).is_file() for f in TOKENIZER_FILES) else ""
        return _from_config(path / "config.json", source, tokenizer, lambda: read_config(path))
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _from_config(path, source, "",
                            lambda: read_config(path.parent, gguf_file=str(path)))
    if path.is_file() and path.suffix.lower() == ".zip":
        return _zipped(path, source)
    raise UserError(f"{paths.shown(path)}: no model config found, so its size is unknown")


def _hub_folder(source: str) -> Path | None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from core.models.archive import private_dir
    from core.models.loaders import looks_like_hub_id

    if not looks_like_hub_id(source):
        return None
    try:
        return Path(snapshot_download(source, allow_patterns=["*.json"], local_files_only=True,
                                      cache_dir=private_dir("models", "hub")))
    except LocalEntryNotFoundError:
        return None


def model_size(source: str) -> ModelSize:
    """The sizes of the model ``source`` names (a loaded name, a built-in or named source, a
    folder, zip, GGUF, ``ADAPTER@BASE`` or a downloaded hub id), reading no weight."""
    from core.models import default_registry
    from core.models.loaders import SMOLLM2, smollm2_path, split_base

    source = source.strip()
    loaded = default_registry().get(source)
    if loaded is not None:
        return ModelSize(**_describe(loaded.model, source, "") | {"loaded": True})
    adapter, base = split_base(source)
    if adapter == SMOLLM2:
        return _from_path(smollm2_path(), source, None)
    path = sources.model_path(adapter) or Path(adapter).expanduser()
    paths.check_readable(path)
    if not path.exists():
        path = _hub_folder(adapter)
        if path is None:
            raise UserError(f"{source!r} is not here yet (a hub id not downloaded, a demo not "
                            "built): its size is unknown until it is")
    return _from_path(path, source, base)


@lru_cache(maxsize=8)
def _tokenizer(folder: str):
    from core.models.loaders import load_tokenizer

    return load_tokenizer(Path(folder))


def _loaded_tokenizer(size: ModelSize):
    from core.models import default_registry

    loaded = default_registry().get(size.source) if size.loaded else None
    return loaded.tokenizer if loaded is not None else None


def _any_tokenizer(size: ModelSize):
    """The model's tokenizer: the loaded model's, else read from its folder (None without one)."""
    return _loaded_tokenizer(size) or (_tokenizer(size.tokenizer) if size.tokenizer else None)


def check_renderable(source: str, size: ModelSize, template: str = "", *,
                     rows: bool | None = None) -> None:
    """A ``DataError`` (``core.chat.no_template``) when ``source`` holds a fine-tuner's rows and
    the model's tokenizer has no chat template to render them with, nor is one given: the run
    would stop on it, so the estimate says it first. ``rows``: whether it holds rows, when the
    caller has read it already; else the file is read again, and only for a model without a
    template (a chat model's estimate reads its data once)."""
    from core import chat

    if template.strip() or not source.strip():
        return
    tokenizer = _any_tokenizer(size)
    if tokenizer is None or getattr(tokenizer, "chat_template", None):
        return
    if chat.holds_rows(source) if rows is None else rows:
        raise chat.no_template(size.source)


def chars_per_token(texts: list[str], size: ModelSize) -> tuple[float, bool]:
    """Characters per token of ``texts`` under the model's tokenizer (a seeded sample of them),
    and whether a tokenizer measured it (else ``CHARS_PER_TOKEN``)."""
    tokenizer = _any_tokenizer(size)
    step = max(1, len(texts) // SAMPLE_TEXTS)
    sample = [t for t in texts[::step] if t]
    if tokenizer is None or not sample:
        return CHARS_PER_TOKEN, False
    tokens = sum(len(ids) for ids in tokenizer(sample, add_special_tokens=False)["input_ids"])
    return sum(map(len, sample)) / max(tokens, 1), True


@dataclass(frozen=True)
class Texts:
    """Texts as the scoring engine sees them: how many, and their tokens."""

    count: int
    tokens: float       # tokens scored, all texts
    forward: float      # tokens through the model: a text longer than the window is read in
                        # windows that overlap by half
    length: float       # mean tokens a window holds (the attention's reach)
    measured: bool      # whether a tokenizer counted them


def text_stats(texts: list[str], size: ModelSize, *, window: int | None = None,
               cut: int | None = None) -> Texts:
    """The ``Texts`` of ``texts`` scored one by one under ``size``'s model (each cut to ``cut``
    tokens if given)."""
    ratio, measured = chars_per_token(texts, size)
    window = max(2, window or min(size.context, 1024))
    lengths = [min(len(t) / ratio + 1, cut or math.inf) for t in texts]   # + the context token
    forward = [n if n <= window else window * math.ceil((n - window) / (window // 2) + 1)
               for n in lengths]
    mean = sum(min(n, window) for n in lengths) / max(len(lengths), 1)
    return Texts(len(texts), sum(lengths), sum(forward), mean, measured)

