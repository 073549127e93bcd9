"""Build model files for the model and scoring tests: a GGUF, zips, broken folders."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import gguf
import pytest
import numpy as np

from conftest import TINY_TEXTS

_TRANSPOSED = ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")


def tiny_gpt2(n_positions: int = 64):
    """A tiny random GPT-2 and its tokenizer (the same recipe as the ``tiny_lm_dir`` fixture)."""
    from core.models.tiny import new_gpt2, train_tokenizer

    tokenizer = train_tokenizer(TINY_TEXTS * 4, vocab_size=300)
    model = new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=32, n_positions=n_positions, seed=0)
    return model, tokenizer


def write_gpt2_gguf(model, tokenizer, path: Path, *, architecture: str = "gpt2") -> Path:
    """Write a GPT-2 and its BPE tokenizer as an F32 GGUF, the way llama.cpp's converter does."""
    cfg = model.config
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny")
    writer.add_context_length(cfg.n_positions)
    writer.add_embedding_length(cfg.n_embd)
    writer.add_feed_forward_length(4 * cfg.n_embd)
    writer.add_block_count(cfg.n_layer)
    writer.add_head_count(cfg.n_head)
    writer.add_layer_norm_eps(cfg.layer_norm_epsilon)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    spec = json.loads(tokenizer.backend_tokenizer.to_str())["model"]
    tokens = [t for t, _ in sorted(spec["vocab"].items(), key=lambda kv: kv[1])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t == tokenizer.eos_token else 1 for t in tokens])
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in spec["merges"]])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPT2, cfg.n_layer)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embedding
            continue
        gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        array = tensor.numpy().T if gguf_name.endswith(_TRANSPOSED) else tensor.numpy()
        writer.add_tensor(gguf_name, np.ascontiguousarray(array, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def zip_folder(folder: Path, path: Path, *, prefix: str = "model/") -> Path:
    """Zip every file of ``folder`` under ``prefix``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(folder.iterdir()):
            zf.write(file, prefix + file.name)
    return path


def copy_folder(folder: Path, target: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A copy of a model folder, leaving out files whose name starts with one of ``without``."""
    target.mkdir(parents=True)
    for file in folder.iterdir():
        if not file.name.startswith(without):
            shutil.copy(file, target / file.name)
    return target


@pytest.fixture(autouse=True)
def clean_models():
    """Each test starts with no loaded model and an empty score cache (both are process-wide)."""
    from core.models import default_registry
    from core.scoring import clear_cache

    default_registry().clear()
    clear_cache()
    yield
    default_registry().clear()
    clear_cache()
