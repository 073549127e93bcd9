"""The n-gram canary model trained one at a time with Opacus' PrivacyEngine: the reference
that the batched trainer of ``core.dp.ngram_canary`` is tested and benchmarked against."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class NGram(nn.Module):
    """The lazily trained n-gram model: one row of D logits per canary position, from θ = 0."""

    def __init__(self, digits: int, symbols: int) -> None:
        super().__init__()
        self.table = nn.Embedding(digits, symbols)
        nn.init.zeros_(self.table.weight)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.table(positions)


def opacus_log_prob(canary: torch.Tensor, *, symbols: int, sigma: float, clip: float, steps: int,
                    lr: float, seed: int, record: str = "canary") -> float:
    """Train one model with Opacus (q = 1, full batch, loss reduction "sum"); log f_θ(c).

    ``record="canary"``: one record holding all T positions; ``"digit"``: T records
    (position t, digit c_t). The noise comes from a generator seeded with ``seed``.
    """
    digits = canary.numel()
    ngram = NGram(digits, symbols)  # Opacus wraps it; its parameters stay the ones trained
    positions = torch.arange(digits)
    records = ((positions[None], canary[None]) if record == "canary"
               else (positions[:, None], canary[:, None]))
    data = DataLoader(TensorDataset(*records), batch_size=len(records[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "secure RNG turned off": fine for an experiment
        model, optimizer, data = PrivacyEngine().make_private(
            module=ngram, optimizer=torch.optim.SGD(ngram.parameters(), lr=lr), data_loader=data,
            noise_multiplier=sigma, max_grad_norm=clip, poisson_sampling=True,
            loss_reduction="sum", noise_generator=torch.Generator().manual_seed(seed))
        for _ in range(steps):
            for batch_positions, target in data:  # q = 1: one batch, the whole data set
                optimizer.zero_grad()
                logits = model(batch_positions).view(-1, symbols)
                F.cross_entropy(logits, target.view(-1), reduction="sum").backward()
                optimizer.step()
    log_u = torch.log_softmax(ngram.table.weight.detach().double(), dim=-1)
    return float(log_u[positions, canary].sum())
