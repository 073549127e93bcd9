"""Gradient leakage: rebuild a batch of training digits from its shared gradient.

Deep Leakage from Gradients (Zhu, Liu & Han, NeurIPS 2019): the attacker knows the model
``F(x; W)`` and receives ``grad W = d loss(F(x, W), y) / dW`` for a private batch ``(x, y)``.
It draws dummy inputs ``x'`` and soft labels ``y'`` from N(0, 1) and minimises, with L-BFGS,

    D(x', y') = || d loss(F(x', W), softmax(y')) / dW - grad W ||^2              ("l2", DLG)
    D(x', y') = 1 - <grad W', grad W> / (|grad W'| |grad W|)                    ("cosine")

the second being the angle-based objective of Geiping et al. (*Inverting Gradients*, NeurIPS
2020). The model is a small CNN with sigmoid activations (DLG replaces ReLU by sigmoid so that
the objective is twice differentiable). Defences from the DLG paper: Gaussian noise added to
the shared gradient, and pruning its smallest-magnitude entries to zero. Reconstructions are
clipped to the pixel range [0, 1] and matched to the originals (the order within a batch is not
recoverable) by minimum total MSE.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

from core.runtime import Progress, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, param
from core.labs.digits import IMAGE_SIDE, N_CLASSES, as_images, load_digits

N_SNAPSHOTS = 6     # reconstructions kept for the "over iterations" picture
EVALS_PER_STEP = 5  # L-BFGS inner iterations per reported iteration


@dataclass(frozen=True)
class GradientLeakageConfig:
    """Batch, attack objective, defences and effort."""

    batch_size: int = param(1, ge=1, le=64, widget="slider", help="images in the private batch")
    objective: Literal["l2", "cosine"] = param(
        "l2", widget="radio", help="l2: DLG's squared distance; cosine: Geiping et al.'s angle")
    noise_std: float = param(0.0, ge=0.0, le=10.0, widget="select_slider",
                             options=(0.0, 1e-4, 1e-3, 1e-2, 1e-1),
                             label="defence: Gaussian noise σ on the gradient",
                             help="N(0, σ²) added to every shared gradient entry")
    prune_percent: float = param(0.0, ge=0.0, lt=100.0, widget="slider", step=1.0,
                                 label="defence: prune the smallest gradients (%)",
                                 help="this % of smallest-magnitude entries set to zero")
    iterations: int = param(40, ge=1, le=1000, label="L-BFGS iterations",
                            help="L-BFGS steps (each up to 5 inner iterations)")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the batch, model and dummies")
    sweep_batch_sizes: tuple[int, ...] = param(
        (), ge=1, le=64, help="also attack batches of these sizes (the batch-size limit)",
        page="hidden")   # the page's "Batch-size limit" tab sets it

    def __post_init__(self) -> None:
        check_params(self)


@dataclass
class Snapshot:
    iteration: int
    mse: float
    images: list  # batch x 8 x 8, in the order of the originals


@dataclass
class SweepPoint:
    batch_size: int
    mse: float
    label_accuracy: float


@dataclass
class GradientLeakageResult:
    mse: float                    # mean squared pixel error of the matched reconstructions
    per_image_mse: list[float]
    label_accuracy: float         # recovered labels (argmax of the soft labels) that are right
    true_labels: list[int]
    recovered_labels: list[int]
    originals: list               # batch x 8 x 8
    reconstructions: list         # batch x 8 x 8, matched to the originals
    history: list[dict]           # per iteration: gradient-matching loss and image MSE
    snapshots: list[Snapshot]
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)
    sweep: list[SweepPoint] = field(default_factory=list)  # one per sweep_batch_sizes


def make_cnn(seed: int) -> nn.Sequential:
    """The victim: conv(1->12) - conv(12->12, stride 2) - conv(12->12) - linear(192->10), sigmoids."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 12, 3, padding=1), nn.Sigmoid(),
        nn.Conv2d(12, 12, 3, padding=1, stride=2), nn.Sigmoid(),
        nn.Conv2d(12, 12, 3, padding=1), nn.Sigmoid(),
        nn.Flatten(), nn.Linear(12 * (IMAGE_SIDE // 2) ** 2, N_CLASSES)).double()


def _gradients(model: nn.Module, x: torch.Tensor, soft_labels: torch.Tensor,
               create_graph: bool) -> list[torch.Tensor]:
    """Gradient of the mean soft-label cross-entropy of the batch w.r.t. every parameter."""
    loss = -(soft_labels * torch.log_softmax(model(x), dim=1)).sum(dim=1).mean()
    return list(torch.autograd.grad(loss, list(model.parameters()), create_graph=create_graph))


def defend(gradients: list[torch.Tensor], *, noise_std: float, prune_percent: float,
           generator: torch.Generator) -> list[torch.Tensor]:
    """The shared gradient: smallest ``prune_percent``% of |entries| (over all layers) set to
    zero, then N(0, noise_std^2) noise added to every entry."""
    flat = torch.cat([g.flatten() for g in gradients])
    if prune_percent > 0:
        threshold = torch.quantile(flat.abs(), prune_percent / 100.0)
        gradients = [torch.where(g.abs() <= threshold, torch.zeros_like(g), g) for g in gradients]
    if noise_std > 0:
        gradients = [g + noise_std * torch.randn(g.shape, generator=generator, dtype=g.dtype)
                     for g in gradients]
    return gradients


def _distance(dummy: list[torch.Tensor], target: list[torch.Tensor], objective: str) -> torch.Tensor:
    if objective == "l2":
        return sum(((d - t) ** 2).sum() for d, t in zip(dummy, target))
    dot = sum((d * t).sum() for d, t in zip(dummy, target))
    norm_d = torch.sqrt(sum((d ** 2).sum() for d in dummy))
    norm_t = torch.sqrt(sum((t ** 2).sum() for t in target))
    return 1 - dot / (norm_d * norm_t + 1e-30)


def _pixels(x: torch.Tensor) -> np.ndarray:
    """Reconstructed images clipped to the pixel range [0, 1] that the attacker knows."""
    return np.clip(x.numpy()[:, 0], 0.0, 1.0)


def _matched(recon: np.ndarray, originals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-image MSE and, for each original, the index of its reconstruction (min total MSE)."""
    cost = ((originals[:, None] - recon[None]) ** 2).mean(axis=(2, 3))
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols], cols


def run(config: GradientLeakageConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> GradientLeakageResult:
    """Reconstruct the batch, then (if asked) batches of each sweep size with the same knobs."""
    parts = 1 + len(config.sweep_batch_sizes)
    result = reconstruct(config, progress=lambda f, m="", partial=None: progress(f / parts, m),
                         cancel=cancel)
    for k, size in enumerate(config.sweep_batch_sizes, start=1):
        if is_cancelled(cancel):
            result.stopped_early = True
            break
        point = reconstruct(replace(config, batch_size=size, sweep_batch_sizes=()), cancel=cancel,
                            progress=lambda f, m="", partial=None, k=k, size=size: progress(
                                (k + f) / parts, f"sweep, batch {size}: {m}"))
        result.sweep.append(SweepPoint(size, point.mse, point.label_accuracy))
    return result


def _shared_gradient(config: GradientLeakageConfig):
    """The private batch (images, labels), the victim model, the defended gradient it shares,
    and the generator the attacker's dummies are then drawn from."""
    rng = np.random.default_rng(config.seed)
    digits = load_digits()
    pick = rng.choice(len(digits.x_train), size=config.batch_size, replace=False)
    originals = as_images(digits.x_train[pick]).astype(np.float64)
    labels = digits.y_train[pick]
    model = make_cnn(config.seed)
    x_true = torch.tensor(originals[:, None])
    y_true = nn.functional.one_hot(torch.tensor(labels), N_CLASSES).double()
    generator = torch.Generator().manual_seed(config.seed)
    shared = [g.detach() for g in defend(_gradients(model, x_true, y_true, create_graph=False),
                                         noise_std=config.noise_std,
                                         prune_percent=config.prune_percent, generator=generator)]
    return originals, labels, model, shared, generator


def reconstruct(config: GradientLeakageConfig, *, progress: Progress = no_progress,
                cancel: threading.Event | None = None) -> GradientLeakageResult:
    """Share one batch's (defended) gradient and reconstruct the batch from it with L-BFGS."""
    originals, labels, model, shared, generator = _shared_gradient(config)
    x_dummy = torch.randn((len(labels), 1, IMAGE_SIDE, IMAGE_SIDE), generator=generator,
                          dtype=torch.float64).requires_grad_()
    y_dummy = torch.randn((len(labels), N_CLASSES), generator=generator,
                          dtype=torch.float64).requires_grad_()
    optimiser = torch.optim.LBFGS([x_dummy, y_dummy], lr=1.0, max_iter=EVALS_PER_STEP,
                                  line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        dummy = _gradients(model, x_dummy, torch.softmax(y_dummy, dim=1), create_graph=True)
        loss = _distance(dummy, shared, config.objective)
        loss.backward()
        return loss

    history: list[dict] = []
    snapshots: list[Snapshot] = []
    snapshot_at = set(np.unique(np.geomspace(1, config.iterations, N_SNAPSHOTS).round().astype(int)))
    last = (x_dummy.detach().clone(), y_dummy.detach().clone())
    notes: list[str] = []
    stopped_early = False
    for iteration in range(1, config.iterations + 1):
        if is_cancelled(cancel):
            stopped_early = True
            break
        loss = optimiser.step(closure).item()  # D at the start of this step
        if not (np.isfinite(loss) and torch.isfinite(x_dummy).all() and torch.isfinite(y_dummy).all()):
            notes.append(f"the optimisation diverged at iteration {iteration}; "
                         "showing the reconstruction before that")
            break
        converged = torch.equal(x_dummy, last[0]) and torch.equal(y_dummy, last[1])
        last = (x_dummy.detach().clone(), y_dummy.detach().clone())
        recon = _pixels(last[0])
        errors, order = _matched(recon, originals)
        history.append({"iteration": iteration, "gradient_loss": loss, "mse": float(errors.mean())})
        if iteration in snapshot_at:
            snapshots.append(Snapshot(iteration, float(errors.mean()), recon[order].tolist()))
        progress(iteration / config.iterations,
                 f"iteration {iteration}/{config.iterations}: image MSE {errors.mean():.2e}",
                 partial={"history": history})
        if converged:
            notes.append(f"L-BFGS converged (no further move) at iteration {iteration}")
            break

    recon = _pixels(last[0])
    errors, order = _matched(recon, originals)
    if history and (not snapshots or snapshots[-1].iteration != len(history)):
        snapshots.append(Snapshot(len(history), float(errors.mean()), recon[order].tolist()))
    recovered = last[1].numpy().argmax(axis=1)[order]
    return GradientLeakageResult(
        mse=float(errors.mean()), per_image_mse=errors.tolist(),
        label_accuracy=float((recovered == labels).mean()), true_labels=labels.tolist(),
        recovered_labels=recovered.tolist(), originals=originals.tolist(),
        reconstructions=recon[order].tolist(), history=history, snapshots=snapshots,
        stopped_early=stopped_early, notes=notes)


def tiny_config() -> GradientLeakageConfig:
    return GradientLeakageConfig(batch_size=1, iterations=3)


SPEC = AttackSpec(name="gradient-leakage", title="Deep leakage from gradients (DLG)",
                  config_type=GradientLeakageConfig,
                  result_type=GradientLeakageResult, run=run, tiny_config=tiny_config,
                  headline=lambda r: {"mse": r.mse, "label_accuracy": r.label_accuracy,
                                      "iterations": len(r.history)},
                  describe=lambda c: f"DLG ({c.objective}) on {c.batch_size} image(s), "
                                     f"{c.iterations} iterations" + (
                                         f", sweep {c.sweep_batch_sizes}" if c.sweep_batch_sizes
                                         else ""))
