"""The smallest model the DP tests train: frozen embeddings, a LayerNorm and a linear head over
``VOCAB`` tokens, the same weights at every construction (seed 0)."""

from types import SimpleNamespace

import torch

VOCAB = 11


class TinyLM(torch.nn.Module):
    """Logits of shape (batch, tokens, vocab) from ``forward(input_ids)``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.embed.weight.requires_grad_(False)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, input_ids):
        return self.head(self.norm(self.embed(input_ids)))


class TinyHFLM(TinyLM):
    """The same, called like a Hugging Face LM: an output whose ``logits`` are the tensor."""

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return SimpleNamespace(logits=super().forward(input_ids))
