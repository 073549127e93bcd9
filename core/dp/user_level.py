"""User-level DP-SGD: the privacy unit is a user, all of their records at once (Charles et al.,
"Fine-tuning large language models with user-level differential privacy", SaTML 2025: user-level
sampling, ULS; Kandpal et al. 2023, §4.4: example-level DP protects records, not users).

Each step, over the U users of the training set:

* Poisson sampling of users: each joins the batch independently with probability
  q = 1/⌈U/B⌉ (Opacus' Poisson sampler over user indices, as over records at example level);
* each sampled user u contributes k_u = min(k, n_u) of their n_u records, drawn uniformly
  without replacement (jax_privacy's ``UserSelectionStrategy`` cycles through them instead;
  the guarantee does not depend on which of a user's records are taken);
* their gradient is g_u = (1/k_u) Σ_i ∇ℓ_i ("mean") or Σ_i ∇ℓ_i ("sum"), from Opacus'
  per-sample gradients (``GradSampleModule`` hooks) summed per user;
* g_u is clipped as one unit to C and noised: (Σ_u g_u min(1, C/‖g_u‖) + N(0, σ²C²I)) / ⌊qU⌋,
  Opacus' ``DPOptimizer`` given the per-user gradients in place of per-sample ones.

Adding or removing a user moves the clipped sum by at most C, so the Poisson-subsampled
Gaussian mechanism's RDP for (q, σ, T) bounds what the run reveals about any one user: the same
accountant as the example-level run, with q over users. Ghost clipping cannot do this: it gets
each record's gradient norm without the gradient, and the norm of a sum of records' gradients
is no function of their norms, so the per-user clip needs the per-sample gradients themselves.
σ = 0 is the non-private reference: the same user batches and per-user gradients, no clipping,
no noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.dp.opacus_seam import Training, record_losses

MODE = "hooks"   # Opacus' grad_sample_mode: per-sample gradients in p.grad_sample


@dataclass
class Users:
    """The training records grouped by user: ``records[u]`` are user u's record indices."""

    names: list[str]
    records: list[torch.Tensor]


def group_records(owners: list[str]) -> Users:
    """Users in order of first appearance, each with the indices of their records."""
    rows: dict[str, list[int]] = {}
    for index, owner in enumerate(owners):
        rows.setdefault(owner, []).append(index)
    return Users(list(rows), [torch.tensor(r) for r in rows.values()])


def draw(users: Users, batch, k: int,
         generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to ``k`` records of each user in ``batch``, uniformly without replacement: the record
    indices and, for each, its user's position in the batch."""
    picks, owner = [], []
    for position, user in enumerate(int(u) for u in batch):
        rows = users.records[user]
        chosen = rows[torch.randperm(len(rows), generator=generator)[:k]]
        picks.append(chosen)
        owner.append(torch.full((len(chosen),), position))
    return torch.cat(picks), torch.cat(owner)


def record_weights(owner: torch.Tensor, n_users: int, reduce: str) -> torch.Tensor:
    """Each record's weight in its user's gradient: 1/k_u for "mean", 1 for "sum"."""
    if reduce == "sum":
        return torch.ones(len(owner))
    return 1.0 / torch.bincount(owner, minlength=n_users)[owner].float()


def per_user_gradients(params, owner: torch.Tensor, n_users: int, reduce: str) -> None:
    """Replace each ``p.grad_sample`` (records × shape) by the users' g_u (users × shape)."""
    weights = record_weights(owner, n_users, reduce)
    for p in params:
        sample = p.grad_sample
        scaled = sample * weights.to(sample).view(-1, *[1] * (sample.dim() - 1))
        p.grad_sample = sample.new_zeros((n_users, *sample.shape[1:])).index_add_(
            0, owner.to(sample.device), scaled)


def user_step(training: Training, data, users: Users, batch, *, k: int,
              reduce: str, generator: torch.Generator, device) -> float | None:
    """One optimizer step on the users ``batch``; the mean loss of their records (None for an
    empty batch: a noise-only step with DP)."""
    training.optimizer.zero_grad(set_to_none=True)
    if len(batch) == 0:
        training.empty_step()
        return None
    rows, owner = draw(users, batch, k, generator)
    inputs, mask, labels = (t[rows].to(device) for t in (data.inputs, data.mask, data.labels))
    losses = record_losses(training.logits(inputs, mask), labels)
    if training.engine is None:   # Σ_u g_u / ⌊qU⌋, the DP step without clipping and noise
        weights = record_weights(owner, len(batch), reduce).to(losses)
        ((losses * weights).sum() / training.expected_batch_size).backward()
    else:   # Opacus scales the mean loss back: p.grad_sample[i] = ∇ℓ_i
        losses.mean().backward()
        per_user_gradients(training.optimizer.params, owner, len(batch), reduce)
    training.optimizer.step()
    return losses.mean().item()


def clipping_modes(model: torch.nn.Module) -> dict[str, str]:
    """How each trainable layer type's per-user gradient is formed."""
    return {type(m).__name__: "per-sample gradients (hooks), summed per user, clipped per user"
            for m in model.modules() if any(p.requires_grad for p in m.parameters(recurse=False))}
