"""The model card: what a loaded language model is, and a perplexity sanity check."""

from __future__ import annotations

from dataclasses import dataclass

import torch

# A fixed short English text (Dickens, public domain) for the perplexity sanity check: a
# trained English LM scores it in the tens, a random one near its vocabulary size.
PERPLEXITY_TEXT = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, "
    "it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity."
)
DEFAULT_CONTEXT = 2048
# Set by ``core.models.loaders`` on a model merged from a LoRA adapter: (adapter, base) as shown.
ADAPTER_ORIGIN = "leakage_lab_adapter_origin"


@dataclass
class ModelCard:
    """Facts about one loaded causal LM (``perplexity`` is on ``PERPLEXITY_TEXT``). For a LoRA
    adapter merged into its base, ``adapter`` names the adapter and ``base`` the base model's
    source (the natural reference); both are None for any other model."""

    architecture: str
    model_type: str
    parameters: int
    vocab_size: int
    context_length: int
    dtype: str
    device: str
    memory_bytes: int
    file_format: str
    perplexity: float | None = None
    adapter: str | None = None
    base: str | None = None


def check_perplexity(lm) -> float:
    """The perplexity of a loaded model ``lm`` on ``PERPLEXITY_TEXT``, kept on its card: a
    sanity check of the load (a broken one scores near the vocabulary size or worse). Measured
    once per load, by who shows the card (the Models page, ``models load``, an audit's
    provenance), not by ``load_model``, which the engine's scale-out workers call too."""
    if lm.card.perplexity is None:
        from core.scoring import score_texts

        lm.card.perplexity = score_texts(lm, [PERPLEXITY_TEXT])[0].perplexity
    return lm.card.perplexity


def context_length(model: torch.nn.Module) -> int:
    """The longest sequence the model takes (positions it was built for)."""
    config = model.config
    for attr in ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_CONTEXT


def describe(model: torch.nn.Module, tokenizer, *, file_format: str) -> ModelCard:
    """A card for ``model`` without its perplexity (the scoring engine fills that in)."""
    params = list(model.parameters())
    unique = {p.data_ptr(): p for p in params}.values()  # tied weights counted once
    memory = sum(p.numel() * p.element_size() for p in unique)
    memory += sum(b.numel() * b.element_size() for b in model.buffers())
    adapter, base = getattr(model, ADAPTER_ORIGIN, (None, None))
    return ModelCard(
        architecture=type(model).__name__,
        model_type=str(getattr(model.config, "model_type", "unknown")),
        parameters=sum(p.numel() for p in unique),
        vocab_size=len(tokenizer),
        context_length=context_length(model),
        dtype=str(params[0].dtype).removeprefix("torch."),
        device=str(params[0].device),
        memory_bytes=int(memory),
        file_format=file_format,
        adapter=adapter,
        base=base,
    )
