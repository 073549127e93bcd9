"""Label-only membership inference on a digits MLP.

Choquette-Choo, Tramer, Carlini & Papernot, *Label-Only Membership Inference Attacks*
(ICML 2021). A target model ``h`` is trained on ``n_members`` digits (the members); as many
other digits are non-members. The attacker trains a shadow model the same way on disjoint
data, computes each attack's score on the shadow's members and non-members, and keeps the
threshold that separates them best; it then predicts "member" on the target when the score
reaches that threshold. Scores (higher means "member"):

* gap (Yeom et al. 2018): ``1[argmax h(x) = y]``; its accuracy is 1/2 + (acc_train - acc_test)/2;
* augmentation: fraction of the ``4d + 1`` translations ``|i| + |j| in {0, d}`` still labelled y;
* noise robustness: fraction of ``N`` copies ``x + N(0, sigma^2 I)`` still labelled y;
* boundary distance: label-only estimate of the distance to the decision boundary, the
  smallest radius at which the label changes along random directions (binary search; 0 for a
  misclassified point);
* confidence vector (reference): ``h(x)_y``, the confidence in the true label; when the model
  returns labels only it sees a one-hot vector and falls back to the gap attack.

Defences: L2 regularisation (weight decay) and DP-SGD (Opacus), applied to target and shadow.
Accuracy and AUROC (scikit-learn) are reported as mean and 95% interval over seeds.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.metrics import roc_auc_score, roc_curve

from core.runtime import Cancelled, Progress, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, param
from core.labs.digits import (IMAGE_SIDE, N_CLASSES, N_FEATURES, accuracy, as_images,
                              load_digits, make_mlp, predict_logits, train_classifier)

ATTACKS = ("gap", "augmentation", "noise robustness", "boundary distance", "confidence vector")
BOUNDARY_RADIUS = 8.0    # the boundary search looks this far (a digit has norm about 4)
BOUNDARY_STEPS = 12      # bisection steps per direction
DELTA = 1e-5             # DP-SGD epsilon is reported at this delta
ROC_POINTS = 101


@dataclass(frozen=True)
class LabelOnlyConfig:
    """Target/shadow training, attack parameters, what the API returns, and the defences."""

    n_members: int = param(200, ge=10, le=1797 // 4, widget="slider", label="members per model",
                           help="members of each model, and as many non-members: target and "
                                "shadow together need 4 x this many of the 1,797 digits")
    hidden: int = param(128, ge=1, le=1024, help="hidden width of the MLP")
    epochs: int = param(60, ge=1, le=500, widget="slider", label="training epochs",
                        help="training epochs of target and shadow")
    n_seeds: int = param(3, ge=1, le=20, widget="slider", label="seeds (target/shadow pairs)",
                         help="independent target/shadow pairs")
    labels_only: bool = param(False, label="API returns labels only",
                              help="the API returns only the predicted label")
    shift: int = param(1, ge=1, le=4, widget="slider", label="shift d (pixels)",
                       help="augmentation attack: translations by d pixels")
    noise_sigma: float = param(0.2, gt=0.0, le=5.0, label="noise σ",
                               help="noise-robustness attack: σ of the Gaussian noise")
    noise_queries: int = param(50, ge=1, le=1000, widget="slider",
                               label="noisy queries per point",
                               help="noise-robustness attack: noisy copies per point")
    directions: int = param(8, ge=1, le=100, widget="slider", label="boundary directions",
                            help="boundary-distance attack: random directions per point")
    weight_decay: float = param(0.0, ge=0.0, le=10.0, label="weight decay",
                                help="defence: L2 regularisation")
    dp_sgd: bool = param(False, label="DP-SGD", help="defence: train with DP-SGD (Opacus)")
    noise_multiplier: float = param(1.0, gt=0.0, le=100.0, label="noise multiplier",
                                    help="DP-SGD: σ of the noise, relative to the clipping norm")
    max_grad_norm: float = param(1.0, gt=0.0, le=100.0, label="clipping norm",
                                 help="DP-SGD: per-example gradient clipping norm")
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the first target/shadow pair")

    def __post_init__(self) -> None:
        check_params(self)


@dataclass
class AttackSummary:
    attack: str
    queries_per_point: int
    accuracy_mean: float
    accuracy_ci: float            # half-width of the 95% interval over seeds (0 for one seed)
    auroc_mean: float
    auroc_ci: float
    accuracies: list[float]       # one per seed
    aurocs: list[float]
    roc_fpr: list[float]          # ROC curve of the first seed
    roc_tpr: list[float]


@dataclass
class LabelOnlyResult:
    attacks: list[AttackSummary]
    train_accuracy: float         # target, mean over seeds
    test_accuracy: float          # target on its non-members, mean over seeds
    epsilon: float | None         # DP-SGD epsilon at delta = 1e-5 (None without DP-SGD)
    seeds_done: int
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)


def shifted(x: np.ndarray, di: int, dj: int) -> np.ndarray:
    """Digits (n, 64) translated by ``di`` rows and ``dj`` columns, zero-filled."""
    images = as_images(x)
    out = np.zeros_like(images)
    src_i, dst_i = slice(max(-di, 0), IMAGE_SIDE - max(di, 0)), slice(max(di, 0), IMAGE_SIDE + min(di, 0))
    src_j, dst_j = slice(max(-dj, 0), IMAGE_SIDE - max(dj, 0)), slice(max(dj, 0), IMAGE_SIDE + min(dj, 0))
    out[:, dst_i, dst_j] = images[:, src_i, src_j]
    return out.reshape(len(x), N_FEATURES)


class Api:
    """The target behind its prediction API: probabilities, or only labels; counts queries."""

    def __init__(self, model: torch.nn.Module, labels_only: bool):
        self.model, self.labels_only = model, labels_only

    def labels(self, x: np.ndarray) -> np.ndarray:
        return predict_logits(self.model, x).argmax(axis=1)

    def outputs(self, x: np.ndarray) -> np.ndarray:
        """What a query returns: the softmax vector, or the one-hot label."""
        logits = predict_logits(self.model, x)
        if self.labels_only:
            return np.eye(N_CLASSES)[logits.argmax(axis=1)]
        shifted_logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted_logits)
        return probs / probs.sum(axis=1, keepdims=True)


def attack_scores(api: Api, x: np.ndarray, y: np.ndarray, config: LabelOnlyConfig,
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each attack's membership score (higher = member) for the points ``(x, y)``."""
    correct = (api.labels(x) == y).astype(float)
    d = config.shift
    shifts = [(i, s * (d - abs(i))) for i in range(-d, d + 1) for s in ((1, -1) if abs(i) < d else (1,))]
    augmented = np.mean([correct] + [api.labels(shifted(x, i, j)) == y for i, j in shifts], axis=0)
    noisy = np.mean([api.labels(x + config.noise_sigma * rng.standard_normal(x.shape)) == y
                     for _ in range(config.noise_queries)], axis=0)
    return {"gap": correct, "augmentation": augmented, "noise robustness": noisy,
            "boundary distance": boundary_distance(api, x, y, config.directions, rng) * correct,
            "confidence vector": api.outputs(x)[np.arange(len(y)), y]}


def boundary_distance(api: Api, x: np.ndarray, y: np.ndarray, directions: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Smallest radius (up to ``BOUNDARY_RADIUS``) at which the label of ``x + r u`` stops being
    ``y``, over random unit directions ``u``; bisection on each direction, labels only."""
    best = np.full(len(x), BOUNDARY_RADIUS)
    for _ in range(directions):
        u = rng.standard_normal(N_FEATURES)
        u /= np.linalg.norm(u)
        lo, hi = np.zeros(len(x)), np.full(len(x), BOUNDARY_RADIUS)
        flipped_at_end = api.labels(x + BOUNDARY_RADIUS * u) != y
        for _ in range(BOUNDARY_STEPS):
            mid = 0.5 * (lo + hi)
            flipped = api.labels(x + mid[:, None] * u) != y
            hi, lo = np.where(flipped, mid, hi), np.where(flipped, lo, mid)
        best = np.minimum(best, np.where(flipped_at_end, hi, BOUNDARY_RADIUS))
    return best


def queries_per_point(config: LabelOnlyConfig) -> dict[str, int]:
    return {"gap": 1, "augmentation": 4 * config.shift + 1, "noise robustness": config.noise_queries,
            "boundary distance": 1 + config.directions * (1 + BOUNDARY_STEPS), "confidence vector": 1}


def best_threshold(member_scores: np.ndarray, non_member_scores: np.ndarray) -> float:
    """The threshold ``tau`` ("member iff score >= tau") with the best accuracy on the shadow."""
    candidates = np.unique(np.concatenate([member_scores, non_member_scores, [np.inf]]))
    accuracies = [(np.mean(member_scores >= t) + np.mean(non_member_scores < t)) / 2
                  for t in candidates]
    return float(candidates[int(np.argmax(accuracies))])


def train_model(x: np.ndarray, y: np.ndarray, config: LabelOnlyConfig, seed: int):
    """Train one model (target or shadow) with the configured defences; returns (model, eps),
    eps None without DP-SGD. Opacus wraps ``model`` without copying it, so training the wrapper
    trains ``model`` itself."""
    model = make_mlp([N_FEATURES, config.hidden, N_CLASSES], seed=seed)
    if not config.dp_sgd:
        train_classifier(model, x, y, epochs=config.epochs, lr=1e-2, batch_size=32,
                         weight_decay=config.weight_decay, seed=seed)
        return model, None
    from opacus import PrivacyEngine

    data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    loader = torch.utils.data.DataLoader(data, batch_size=32,
                                         generator=torch.Generator().manual_seed(seed))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5, weight_decay=config.weight_decay)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus warns that its RNG is not cryptographic
        engine = PrivacyEngine(accountant="rdp")
        private, optimiser, loader = engine.make_private(
            module=model, optimizer=optimiser, data_loader=loader,
            noise_multiplier=config.noise_multiplier, max_grad_norm=config.max_grad_norm,
            noise_generator=torch.Generator().manual_seed(seed))
        loss_fn = torch.nn.CrossEntropyLoss()
        private.train()
        for _ in range(config.epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                optimiser.zero_grad()
                loss_fn(private(xb), yb).backward()
                optimiser.step()
        epsilon = engine.get_epsilon(delta=DELTA)
    return model.eval(), float(epsilon)


def _interval(values: list[float]) -> float:
    return float(1.96 * np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def _one_seed(config: LabelOnlyConfig, k: int, progress: Progress,
              cancel: threading.Event | None) -> tuple[dict, float, float, float | None] | None:
    """Shadow then target model of the ``k``-th seed: (the attacks' evaluation, target train and
    test accuracy, epsilon), or None when cancelled before a model."""
    digits = load_digits()
    x_all, y_all = digits.x_all, digits.y_all
    seed = config.seed + k
    rng = np.random.default_rng(seed)
    parts = np.split(rng.permutation(len(x_all))[:4 * config.n_members], 4)  # target, shadow
    scores = {}
    for role, (members, others) in (("shadow", parts[2:]), ("target", parts[:2])):
        if is_cancelled(cancel):
            return None
        progress((k + 0.5 * (role == "target")) / config.n_seeds,
                 f"seed {k + 1}/{config.n_seeds}: training the {role} model")
        model, epsilon = train_model(x_all[members], y_all[members], config,
                                     seed=2 * seed + (role == "target"))
        api = Api(model, config.labels_only)
        scores[role] = [attack_scores(api, x_all[idx], y_all[idx], config, rng)
                        for idx in (members, others)]
    return (_evaluate(scores), accuracy(model, x_all[members], y_all[members]),
            accuracy(model, x_all[others], y_all[others]), epsilon)


def run(config: LabelOnlyConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> LabelOnlyResult:
    """Train target and shadow models over ``n_seeds`` seeds and score every attack."""
    outcomes = []
    for k in range(config.n_seeds):
        outcome = _one_seed(config, k, progress, cancel)
        if outcome is None:
            break
        outcomes.append(outcome)
        progress((k + 1) / config.n_seeds, f"seed {k + 1}/{config.n_seeds} done",
                 partial={"seeds_done": k + 1})
    if not outcomes:
        raise Cancelled()
    per_seed, train_accs, test_accs, epsilons = zip(*outcomes)
    notes = []
    if config.labels_only:
        notes.append("labels only: the confidence-vector attack sees one-hot outputs, "
                     "so it can do no better than the gap attack")
    return LabelOnlyResult(attacks=_summaries(per_seed, config),
                           train_accuracy=float(np.mean(train_accs)),
                           test_accuracy=float(np.mean(test_accs)),
                           epsilon=float(np.mean(epsilons)) if config.dp_sgd else None,
                           seeds_done=len(per_seed),
                           stopped_early=len(per_seed) < config.n_seeds, notes=notes)


def _summaries(per_seed: list[dict], config: LabelOnlyConfig) -> list[AttackSummary]:
    """Per attack: mean and 95% interval of accuracy and AUROC over seeds, first seed's ROC."""
    costs = queries_per_point(config)
    summaries = []
    for attack in ATTACKS:
        accs = [s[attack]["accuracy"] for s in per_seed]
        aucs = [s[attack]["auroc"] for s in per_seed]
        summaries.append(AttackSummary(
            attack=attack, queries_per_point=costs[attack],
            accuracy_mean=float(np.mean(accs)), accuracy_ci=_interval(accs),
            auroc_mean=float(np.mean(aucs)), auroc_ci=_interval(aucs), accuracies=accs,
            aurocs=aucs, roc_fpr=per_seed[0][attack]["fpr"], roc_tpr=per_seed[0][attack]["tpr"]))
    return summaries


def _evaluate(scores: dict) -> dict[str, dict]:
    """Per attack: target accuracy at the shadow threshold, AUROC and the ROC curve."""
    out = {}
    for attack in ATTACKS:
        (s_in, s_out), (t_in, t_out) = ([s[attack] for s in scores[r]] for r in ("shadow", "target"))
        tau = best_threshold(s_in, s_out)
        truth = np.r_[np.ones(len(t_in)), np.zeros(len(t_out))]
        values = np.r_[t_in, t_out]
        fpr, tpr, _ = roc_curve(truth, values)
        grid = np.linspace(0, 1, ROC_POINTS)
        out[attack] = {"accuracy": float((np.mean(t_in >= tau) + np.mean(t_out < tau)) / 2),
                       "auroc": float(roc_auc_score(truth, values)),
                       "fpr": grid.tolist(), "tpr": np.interp(grid, fpr, tpr).tolist()}
    return out


def tiny_config() -> LabelOnlyConfig:
    return LabelOnlyConfig(n_members=40, hidden=32, epochs=5, n_seeds=1, noise_queries=5,
                           directions=2)


def headline(result: LabelOnlyResult) -> dict:
    """Target accuracies, epsilon (with DP-SGD), and each attack's mean accuracy and AUROC."""
    numbers = {"train_accuracy": result.train_accuracy, "test_accuracy": result.test_accuracy}
    if result.epsilon is not None:
        numbers["epsilon"] = result.epsilon
    for summary in result.attacks:
        numbers[f"{summary.attack} accuracy"] = summary.accuracy_mean
        numbers[f"{summary.attack} AUROC"] = summary.auroc_mean
    return numbers


SPEC = AttackSpec(name="label-only-mi", title="Label-only membership inference",
                  config_type=LabelOnlyConfig, result_type=LabelOnlyResult,
                  run=run, tiny_config=tiny_config, headline=headline, table="attacks")
