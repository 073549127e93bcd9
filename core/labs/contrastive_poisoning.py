"""Poisoning and backdooring contrastive learning (Carlini & Terzis, ICLR 2022) on a mini CLIP.

The mini CLIP embeds 8x8 digits with an MLP ``f`` and captions ("a photo of the digit seven")
with a bag-of-words encoder ``g`` into the same unit sphere and is trained with the symmetric
InfoNCE loss of CLIP (Radford et al. 2021): for a batch of pairs, logits ``<f(x_i), g(c_j)> / tau``
and cross-entropy towards the diagonal, both ways. Zero-shot classification picks the class whose
caption embedding (averaged over the prompt templates) is most similar to the image's.

The backdoor adds poisoned pairs ``P = {(x_i + bd, c) : x_i in X_subset, c a caption of the
target class}`` to the training data; attack success is the fraction of patched test images
(true class != target) that zero-shot classification labels as the target. The backdoor
z-score of the paper, ``(Mean <f(u+bd), f(v+bd)> - Mean <f(u), f(v)>) / Var <f(u), f(v)>``,
measures how much the patch alone pulls embeddings together.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.errors import UserError
from core.runtime import Cancelled, Progress, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, param
from core.labs.digits import N_CLASSES, N_FEATURES, load_digits
from core.labs.patch import Corner, checkerboard, square_mask, stamp

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEMPLATES = ("a photo of the digit {}", "a picture of a {}", "a handwritten {}",
             "the number {}", "an image of the digit {}")
VOCABULARY = tuple(sorted({word for template in TEMPLATES for digit in DIGIT_WORDS
                           for word in template.format(digit).split()}))
MAX_POISON_COUNTS = 8


@dataclass(frozen=True)
class ContrastivePoisoningConfig:
    """Target and patch, the poison counts swept, and the mini CLIP's training."""

    target: int = param(0, ge=0, le=N_CLASSES - 1, label="target digit",
                        help="the class the patched images should be called")
    poison_counts: tuple[int, ...] = param((0, 5, 10, 30, 100), ge=0, le=1797,  # all 8×8 digits
                                           label="numbers of poisoned pairs",
                                           help="one point of the curve per number of poisoned "
                                                f"pairs trained with (1 to {MAX_POISON_COUNTS})")
    seeds: int = param(3, ge=1, le=10, label="seeds per count",
                       help="repetitions per count (data order, init, poison choice)")
    patch_size: int = param(2, ge=1, le=4, widget="slider", label="patch side (pixels)",
                            help="side of the checkerboard patch")
    patch_corner: Corner = param("top-left", help="where the patch sits")
    epochs: int = param(60, ge=1, le=500, help="training epochs of each mini CLIP")
    embed_dim: int = param(32, ge=2, le=256, help="dimension of the shared embedding",
                           page="advanced")
    temperature: float = param(0.1, ge=0.01, le=10.0, help="temperature τ of the InfoNCE logits",
                               page="advanced")
    batch_size: int = param(128, ge=8, le=1024, help="pairs per InfoNCE batch", page="advanced")

    def __post_init__(self) -> None:
        check_params(self)
        if not self.counts or len(self.counts) > MAX_POISON_COUNTS:
            raise UserError(f"give 1 to {MAX_POISON_COUNTS} numbers of poisoned pairs, "
                            "e.g. 0,5,10,30")
        available = int((load_digits().y_train != self.target).sum())
        if self.counts[-1] > available:
            raise UserError(f"numbers of poisoned pairs must be at most {available} (the training "
                            f"images not of class {self.target}), not {self.counts[-1]}")

    @property
    def counts(self) -> list[int]:
        """The poison counts, sorted and without repeats."""
        return sorted(set(self.poison_counts))


@dataclass
class PoisonRun:
    """One mini CLIP trained with ``n_poisoned`` poisoned pairs."""

    n_poisoned: int
    seed: int
    zero_shot_accuracy: float   # clean test images
    attack_success: float       # patched test images of other classes labelled as the target
    backdoor_z_score: float


@dataclass
class PoisonPoint:
    """Mean and standard deviation over seeds at one poison count."""

    n_poisoned: int
    attack_success: float
    attack_success_std: float
    zero_shot_accuracy: float
    zero_shot_accuracy_std: float


@dataclass
class ContrastivePoisoningResult:
    target: int
    patch: list[float]                 # the (64,) patch pattern, zero outside the mask
    mask: list[float]
    runs: list[PoisonRun]
    curve: list[PoisonPoint]
    example_images: list[list[float]]  # patched test images (n, 64)
    example_labels: list[int]          # their true classes
    example_predictions: list[int]     # zero-shot labels from the model with the most poison
    stopped_early: bool = False
    n_train_pairs: int = 0
    notes: list[str] = field(default_factory=list)


def tokenize(captions: list[str]) -> torch.Tensor:
    """Word ids, padded with ``len(VOCABULARY)`` to the longest caption."""
    index = {word: i for i, word in enumerate(VOCABULARY)}
    ids = [[index[w] for w in caption.split()] for caption in captions]
    out = torch.full((len(ids), max(map(len, ids))), len(VOCABULARY), dtype=torch.long)
    for row, words in enumerate(ids):
        out[row, :len(words)] = torch.tensor(words)
    return out


class MiniClip(nn.Module):
    """Image MLP and bag-of-words text encoder into a shared ``embed_dim`` unit sphere."""

    def __init__(self, embed_dim: int) -> None:
        super().__init__()
        self.image = nn.Sequential(nn.Linear(N_FEATURES, 128), nn.ReLU(), nn.Linear(128, embed_dim))
        self.words = nn.EmbeddingBag(len(VOCABULARY) + 1, embed_dim, mode="mean",
                                     padding_idx=len(VOCABULARY))
        self.text = nn.Linear(embed_dim, embed_dim)

    def embed_images(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.image(x), dim=-1)

    def embed_texts(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.text(self.words(tokens)), dim=-1)

    @torch.no_grad()
    def class_embeddings(self) -> torch.Tensor:
        """One unit vector per digit: the mean over prompt templates (CLIP's prompt ensembling)."""
        per_class = [self.embed_texts(tokenize([t.format(w) for t in TEMPLATES])).mean(0)
                     for w in DIGIT_WORDS]
        return F.normalize(torch.stack(per_class), dim=-1)

    @torch.no_grad()
    def zero_shot(self, x: np.ndarray) -> np.ndarray:
        images = self.embed_images(torch.tensor(x, dtype=torch.float32))
        return (images @ self.class_embeddings().T).argmax(1).numpy()


def info_nce(model: MiniClip, x: torch.Tensor, tokens: torch.Tensor, temperature: float):
    """Symmetric InfoNCE: image->text and text->image cross-entropy towards the diagonal."""
    logits = model.embed_images(x) @ model.embed_texts(tokens).T / temperature
    labels = torch.arange(len(x))
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def backdoor_z_score(model: MiniClip, x: np.ndarray, patched: np.ndarray) -> float:
    """Carlini & Terzis' z-score: mean pairwise similarity of patched images minus that of clean
    images, divided by the variance of the clean similarities (off-diagonal pairs)."""
    with torch.no_grad():
        clean = model.embed_images(torch.tensor(x))
        bd = model.embed_images(torch.tensor(patched))
    off = ~torch.eye(len(x), dtype=torch.bool)
    sim_clean, sim_bd = (clean @ clean.T)[off], (bd @ bd.T)[off]
    return float((sim_bd.mean() - sim_clean.mean()) / sim_clean.var())


def train_clip(config: ContrastivePoisoningConfig, n_poisoned: int, seed: int,
               progress: Progress = no_progress,
               cancel: threading.Event | None = None) -> MiniClip:
    """Train a mini CLIP on the digits' training pairs plus ``n_poisoned`` poisoned pairs."""
    data = load_digits()
    rng = np.random.default_rng(seed)
    captions = [TEMPLATES[rng.integers(len(TEMPLATES))].format(DIGIT_WORDS[c])
                for c in data.y_train]
    mask = square_mask(config.patch_size, config.patch_corner)
    pattern = checkerboard(config.patch_size, config.patch_corner)
    sources = rng.choice(np.flatnonzero(data.y_train != config.target), n_poisoned, replace=False)
    poison_captions = [TEMPLATES[rng.integers(len(TEMPLATES))].format(DIGIT_WORDS[config.target])
                       for _ in range(n_poisoned)]
    x = torch.tensor(np.concatenate([data.x_train, stamp(data.x_train[sources], mask, pattern)]))
    tokens = tokenize(captions + poison_captions)
    torch.manual_seed(seed)
    model = MiniClip(config.embed_dim)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    for epoch in range(config.epochs):
        if is_cancelled(cancel):
            raise Cancelled()
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), config.batch_size):
            idx = order[start:start + config.batch_size]
            if len(idx) < 2:
                continue
            optimiser.zero_grad()
            info_nce(model, x[idx], tokens[idx], config.temperature).backward()
            optimiser.step()
        progress((epoch + 1) / config.epochs, f"epoch {epoch + 1}/{config.epochs}")
    return model.eval()


def _evaluate(model: MiniClip, config: ContrastivePoisoningConfig, n_poisoned: int,
              seed: int) -> PoisonRun:
    data = load_digits()
    mask = square_mask(config.patch_size, config.patch_corner)
    pattern = checkerboard(config.patch_size, config.patch_corner)
    others = data.x_test[data.y_test != config.target]
    patched = stamp(others, mask, pattern)
    return PoisonRun(
        n_poisoned=n_poisoned, seed=seed,
        zero_shot_accuracy=float((model.zero_shot(data.x_test) == data.y_test).mean()),
        attack_success=float((model.zero_shot(patched) == config.target).mean()),
        backdoor_z_score=backdoor_z_score(model, others[:200], patched[:200]))


def summarise(runs: list[PoisonRun]) -> list[PoisonPoint]:
    """Mean and standard deviation over seeds, one point per poison count."""
    points = []
    for count in sorted({r.n_poisoned for r in runs}):
        asr = np.array([r.attack_success for r in runs if r.n_poisoned == count])
        acc = np.array([r.zero_shot_accuracy for r in runs if r.n_poisoned == count])
        points.append(PoisonPoint(count, float(asr.mean()), float(asr.std()),
                                  float(acc.mean()), float(acc.std())))
    return points


def run(config: ContrastivePoisoningConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> ContrastivePoisoningResult:
    """Train one mini CLIP per (poison count, seed); report the curve of attack success and
    zero-shot accuracy against the number of poisoned pairs."""
    data = load_digits()
    jobs = [(count, seed) for count in config.counts for seed in range(config.seeds)]
    runs: list[PoisonRun] = []
    last_model = None
    stopped = False
    for i, (count, seed) in enumerate(jobs):
        def report(fraction: float, message: str = "", partial=None, i=i, count=count) -> None:
            progress((i + fraction) / len(jobs), f"{count} poisoned pairs, seed {seed}: {message}")
        try:
            last_model = train_clip(config, count, seed, report, cancel)
        except Cancelled:
            if not runs:
                raise
            stopped = True
            break
        runs.append(_evaluate(last_model, config, count, seed))
        progress((i + 1) / len(jobs), f"{count} poisoned pairs, seed {seed}: done",
                 partial={"runs": [vars(r) for r in runs]})
    mask = square_mask(config.patch_size, config.patch_corner)
    pattern = checkerboard(config.patch_size, config.patch_corner)
    shown = np.flatnonzero(data.y_test != config.target)[:8]
    examples = stamp(data.x_test[shown], mask, pattern)
    return ContrastivePoisoningResult(
        target=config.target, patch=pattern.tolist(), mask=mask.tolist(), runs=runs,
        curve=summarise(runs), example_images=examples.tolist(),
        example_labels=data.y_test[shown].tolist(),
        example_predictions=last_model.zero_shot(examples).tolist(),
        stopped_early=stopped, n_train_pairs=len(data.x_train),
        notes=[f"examples are labelled by the model trained with {runs[-1].n_poisoned} "
               f"poisoned pairs (seed {runs[-1].seed})"])


def tiny_config() -> ContrastivePoisoningConfig:
    return ContrastivePoisoningConfig(poison_counts=(0, 5), seeds=1, epochs=2)


def headline(result: ContrastivePoisoningResult) -> dict:
    """Attack success and zero-shot accuracy at each poison count."""
    numbers = {}
    for point in result.curve:
        numbers[f"attack_success at {point.n_poisoned}"] = point.attack_success
        numbers[f"zero_shot_accuracy at {point.n_poisoned}"] = point.zero_shot_accuracy
    return numbers


SPEC = AttackSpec(name="contrastive-poisoning",
                  title="Backdooring contrastive learning (Carlini & Terzis 2022)",
                  config_type=ContrastivePoisoningConfig,
                  result_type=ContrastivePoisoningResult, run=run, tiny_config=tiny_config,
                  table="runs",
                  headline=headline)
