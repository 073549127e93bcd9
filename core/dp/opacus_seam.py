"""The one adapter around Opacus: everything DP fine-tuning needs beyond ``make_private`` itself
(the wrapped module and optimizer, ghost clipping's loss, the Poisson batch sampler, the
accountant's state, which layers ghost clipping covers). ``tests/core/test_opacus_seam.py`` pins each
behaviour relied on, so an Opacus release that changes one fails there first (requirements.txt
caps Opacus below the next minor version).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

# Opacus' notes that do not apply here: the noise is seeded on purpose (resumable, reproducible
# experiments, not a production release), and the frozen embeddings mean no input needs a gradient.
warnings.filterwarnings("ignore", message="Secure RNG turned off", category=UserWarning)
warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)


@dataclass
class Training:
    """One σ's training objects; ``engine`` is None for σ = 0 (same batches, no clipping, no noise)."""

    model: torch.nn.Module        # what the forward pass calls (Opacus' wrapper when private)
    module: torch.nn.Module       # the model itself: measured and checkpointed
    optimizer: Any                # what steps (Opacus' DPOptimizer when private)
    inner_optimizer: Any          # the AdamW underneath: its state is checkpointed
    batches: Any                  # Poisson batches of record indices, one torch.rand per batch
    criterion: Any
    engine: Any
    mixed: bool = False           # the forward pass under bf16 autocast

    def logits(self, inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The forward pass's float32 logits; with ``mixed``, computed under bf16 autocast
        (mixed precision, Micikevicius et al. 2018: the weights, their gradients, Opacus'
        clipping and noise and the optimizer stay float32)."""
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=self.mixed):
            logits = self.model(input_ids=inputs, attention_mask=mask, use_cache=False).logits
        return logits.float()

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean next-token loss of the batch; ghost clipping's loss needs the logits' shape."""
        if self.engine is None or self.criterion is None:
            return record_losses(logits, labels).mean()
        flat_logits, flat_labels = logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten()
        return self.criterion(flat_logits, flat_labels, shape=logits[:, :-1].shape)

    def empty_step(self) -> None:
        """An empty Poisson batch: a DP step is then the noise alone (no step without DP)."""
        if self.engine is not None:
            for p in self.optimizer.params:
                p.grad = torch.zeros_like(p)
                if self.criterion is None:  # hooks mode: an empty batch of per-sample gradients
                    p.grad_sample = p.new_zeros((0, *p.shape))
            self.optimizer.step()

    @property
    def expected_batch_size(self) -> int:
        """E|batch| as Opacus divides by it: ⌊N q⌋ over the N records (or users) sampled."""
        return int(self.batches.num_samples * self.batches.sample_rate)

    def accountant_state(self) -> dict | None:
        return None if self.engine is None else self.engine.accountant.state_dict()

    def load_accountant(self, state: dict | None) -> None:
        if self.engine is not None:
            self.engine.accountant.load_state_dict(state)

    def epsilon(self, delta: float) -> float | None:
        """ε at δ from Opacus' own RDP accountant (None without DP)."""
        return None if self.engine is None else self.engine.accountant.get_epsilon(delta)


def record_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each record's mean next-token loss (padding, label −100, left out): shape (batch,)."""
    per_token = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1),
                                                  labels[:, 1:].flatten(), reduction="none")
    per_token = per_token.view(labels.shape[0], -1)
    return per_token.sum(1) / (labels[:, 1:] != -100).sum(1).clamp(min=1)


def prepare_training(model: torch.nn.Module, optimizer, loader, *, sigma: float, clip: float,
                     noise_generator: torch.Generator, mode: str = "ghost",
                     mixed: bool = False) -> Training:
    """Opacus' DP-SGD for σ > 0 (RDP accountant, Poisson sampling, ghost clipping or, with
    ``mode="hooks"``, per-sample gradients in ``p.grad_sample``), else the same Poisson batches
    without privacy. The batches are drawn over ``loader``'s dataset: records, or users."""
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader

    if sigma == 0:
        loader = DPDataLoader.from_data_loader(loader)
        return Training(model, model, optimizer, optimizer, loader.batch_sampler, None, None, mixed)
    engine = PrivacyEngine(accountant="rdp")
    made = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        criterion=torch.nn.CrossEntropyLoss(ignore_index=-100, reduction="mean"),
        noise_multiplier=sigma, max_grad_norm=clip, grad_sample_mode=mode,
        noise_generator=noise_generator, poisson_sampling=True)
    # ghost mode returns its two-pass loss as a third item; hooks mode no criterion
    wrapped, private_optimizer, criterion, loader = made if mode == "ghost" else (*made[:2], None, made[2])
    return Training(wrapped, wrapped._module, private_optimizer,
                    private_optimizer.original_optimizer, loader.batch_sampler, criterion, engine,
                    mixed)


def clipping_modes(model: torch.nn.Module) -> dict[str, str]:
    """How Opacus' ghost mode gets each trainable layer type's per-record gradient norm."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping as Ghost

    modes = {}
    for module in model.modules():
        if any(p.requires_grad for p in module.parameters(recurse=False)):
            kind = type(module)
            modes[kind.__name__] = ("ghost (norm without per-sample gradients)"
                                    if kind in Ghost.NORM_SAMPLERS
                                    else "per-sample gradients (hooks)" if kind in Ghost.GRAD_SAMPLERS
                                    else "per-sample gradients (functorch)")
    return modes
