"""The model DP fine-tuning trains: a float32 copy with GPT-2's Conv1D as nn.Linear, no dropout,
frozen input embeddings and an output layer of its own (Stock et al. §4.3 freeze the embeddings;
Opacus' ghost clipping refuses tied weights and knows no Conv1D)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from transformers.pytorch_utils import Conv1D

from core.errors import UserError
from core.models import LoadedModel
from core.models.tiny import disable_dropout


def conv1d_to_linear(model: torch.nn.Module) -> torch.nn.Module:
    """Replace transformers' ``Conv1D`` (y = x W + b, W of shape in×out) by the same ``nn.Linear``."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, Conv1D):
                linear = torch.nn.Linear(*child.weight.shape, device=child.weight.device,
                                         dtype=child.weight.dtype)
                with torch.no_grad():
                    linear.weight.copy_(child.weight.T)
                    linear.bias.copy_(child.bias)
                setattr(module, name, linear)
    return model


def untie_output(model: torch.nn.Module) -> torch.nn.Module:
    """An output layer tied to the input embeddings gets a copy of its own (ghost clipping
    refuses shared parameters; the head trains while the embeddings stay frozen)."""
    output = model.get_output_embeddings()
    if output is not None and output.weight is model.get_input_embeddings().weight:
        output.weight = torch.nn.Parameter(output.weight.detach().clone())
        model.config.tie_word_embeddings = False
    return model


def trainable_copy(base: LoadedModel) -> torch.nn.Module:
    """A float32 copy of the model with Conv1D as Linear, no dropout, frozen input embeddings and
    an output layer of its own (a trainable copy when it was tied to the input embeddings)."""
    model = untie_output(conv1d_to_linear(disable_dropout(copy.deepcopy(base.model).float())))
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding):
            module.weight.requires_grad_(False)
    if not any(p.requires_grad for p in model.parameters()):
        raise UserError("the model has nothing to train once its embeddings are frozen")
    return model.train()


def scoring_view(base: LoadedModel, model: torch.nn.Module) -> LoadedModel:
    """The model being trained, as a fresh ``LoadedModel`` (a new key: no stale cached scores)."""
    return LoadedModel(base.name + "+dp-finetune", base.source, model, base.tokenizer,
                       base.device, base.card)


def save_trained(base: LoadedModel, weights: dict[str, torch.Tensor], folder: Path) -> None:
    """``base`` with the trained ``weights`` (``trainable_copy``'s names and layout: Linear for
    Conv1D, W transposed) as a Hugging Face folder in base's own layout, tokenizer included."""
    model = untie_output(copy.deepcopy(base.model).float().cpu())
    conv1d = {name for name, module in model.named_modules() if isinstance(module, Conv1D)}
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            owner, kind = name.rsplit(".", 1)
            params[name].copy_(value.T if owner in conv1d and kind == "weight" else value)
    model.save_pretrained(folder)
    base.tokenizer.save_pretrained(folder)
