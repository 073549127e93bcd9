"""Build small GPT-2 style language models and their tokenizers from scratch.

The one tiny-model factory: the demo models, the specs' tiny configs and the tests all build
ordinary Hugging Face ``GPT2LMHeadModel`` folders (safetensors + ``tokenizer.json``), so they
travel the exact path a user's own checkpoint does: the same loader, scoring engine and attacks.
``tiny_random_models`` caches its folders under ``cache_home()/tiny``, so nothing is leaked in /tmp.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import hashlib
import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from core import paths

EOS = "<|endoftext|>"


def train_tokenizer(texts: Iterable[str], *, vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer (as GPT-2's) trained on ``texts``; ``EOS`` is token 0."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=EOS, eos_token=EOS, pad_token=EOS, unk_token=EOS
    )


def new_gpt2(
    tokenizer: PreTrainedTokenizerFast,
    *,
    n_layer: int = 2,
    n_head: int = 2,
    n_embd: int = 64,
    n_positions: int = 128,
    seed: int = 0,
) -> GPT2LMHeadModel:
    """A freshly initialised GPT-2 whose vocabulary matches ``tokenizer``."""
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config).eval()


def disable_dropout(model: GPT2LMHeadModel) -> GPT2LMHeadModel:
    """Set every dropout probability to 0 (in the modules and the saved config).

    Small models trained for less than an epoch (the demo, DP fine-tuning) want the training
    data memorised: dropout would only slow that down.
    """
    for key in ("resid_pdrop", "embd_pdrop", "attn_pdrop"):
        setattr(model.config, key, 0.0)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def save_hf_folder(model: GPT2LMHeadModel, tokenizer: PreTrainedTokenizerFast, folder: Path) -> Path:
    """Write ``model`` (safetensors) and ``tokenizer`` as a Hugging Face model folder."""
    folder = Path(folder)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_random_models(texts: Sequence[str], names: Sequence[str], *, vocab_size: int = 300,
                       n_embd: int = 16, n_positions: int = 32) -> list[str]:
    """Untrained one-layer GPT-2 folders (seed i for the i-th name) sharing one tokenizer trained
    on ``texts``: the specs' tiny configs. Made once under ``cache_home()/tiny/<recipe hash>``."""
    recipe = json.dumps([list(texts), list(names), vocab_size, n_embd, n_positions])
    root = paths.cache_home() / "tiny" / hashlib.sha256(recipe.encode()).hexdigest()[:16]
    folders = [root / name for name in names]
    if not all((folder / "model.safetensors").exists() for folder in folders):
        tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
        for seed, folder in enumerate(folders):
            model = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=n_embd, n_positions=n_positions,
                             seed=seed)
            save_hf_folder(model, tokenizer, folder)
    return [str(folder) for folder in folders]


# ChatML, with the {% generation %} marks that transformers' assistant-token mask reads
CHATML = ("{% for m in messages %}{% if m['role'] == 'assistant' %}<|im_start|>assistant\n"
          "{% generation %}{{ m['content'] }}<|im_end|>{% endgeneration %}\n{% else %}"
          "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def chatml_model(texts: Sequence[str], *, seed: int = 0) -> tuple[GPT2LMHeadModel,
                                                                  PreTrainedTokenizerFast]:
    """A random two-layer GPT-2 whose byte-level BPE tokenizer (trained on ``texts``) holds the
    ChatML template and its special tokens: a tiny chat model."""
    tokenizer = train_tokenizer(list(texts) * 4, vocab_size=300)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = CHATML
    model = new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=32, n_positions=256, seed=seed)
    model.resize_token_embeddings(len(tokenizer))
    return model, tokenizer


def tiny_chat_base(texts: Sequence[str], name: str) -> str:
    """A ``chatml_model`` folder, made once under ``cache_home()/tiny/<recipe hash>``."""
    recipe = json.dumps([list(texts), name, CHATML])
    folder = paths.cache_home() / "tiny" / hashlib.sha256(recipe.encode()).hexdigest()[:16] / name
    if not (folder / "model.safetensors").exists():
        save_hf_folder(*chatml_model(texts), folder)
    return str(folder)
