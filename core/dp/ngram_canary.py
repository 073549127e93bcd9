"""Is the bound tight? Monte Carlo over N DP-SGD-trained n-gram models (Stock et al. 2022, §4.1).

The dataset is a single random canary c ∈ {0..D−1}^T. The lazily trained n-gram model keeps
only the parameters on the canary's branch, θ ∈ R^{T×D}, and outputs

    f_θ(c) = Π_t u_{t,c_t},   u_{t,i} = e^{θ_{t,i}} / Σ_d e^{θ_{t,d}},   loss = −Σ_t log u_{t,c_t}.

Training is Opacus' DP-SGD with sampling rate q = 1 (every step's batch is the whole data
set): each per-sample gradient is clipped to norm C (factor min(1, C/(‖g‖+1e-6)), exactly as
Opacus), Gaussian noise N(0, σ²C²) is added to the sum of clipped gradients (loss reduction
"sum"), and SGD steps with η = 0.5/σ from θ = 0 (the uniform model). What a *record* is:

* ``record="canary"`` (default): the canary is one record, g = softmax(θ) − onehot(c) over all
  of θ. The secret is one record, so L(p0) of one record bounds its leakage.
* ``record="digit"``: each (prefix, next digit) pair is a record, as in an n-gram data set; the
  T per-sample gradients are the rows of g, clipped separately. One step at σ = 2.875 then
  gives mean ln f ≈ −22.5 and std ≈ 1.5, the statistics the paper reports (§3.2). The secret
  spans T records whose clipped gradients lie on disjoint rows (sensitivity √T·C), so only
  T·d_α bounds it; the one-record L(p0) the paper plots can be exceeded after a few steps.

N models are trained at once as one (T, D, N) tensor computation. The posterior
p1 = E_θ f_θ(c) is estimated in log space (Eq. 4),

    log p1 ≈ logsumexp_i log f_θi(c) − log N,

with a percentile bootstrap interval; p0 = D^−T by symmetry of the digits. The empirical
leakage log(p1/p0) is compared with L(p0) and min_α h(α, p0) for the same mechanism
(q = 1, σ, steps) from ``core.bounds`` (Figure 4 of the paper), and with the most any attack
can leak from this Gaussian mechanism, log Φ(Φ⁻¹(p0) + μ) − log p0 with μ = √(steps·k)/σ for
a secret of k records (Gaussian DP, Dong, Roth & Su 2019; exact for q = 1). Computed in nats,
reported in bits (log2), as the Bound Explorer does.

How many steps the Monte Carlo can afford: with η = 0.5/σ every step adds noise of std
η·σ·C = 0.5·C to each θ_{t,d}, whatever σ, so log f spreads with √steps (std ≈ 2.2, 3.8, 7.1
bits after 1, 3, 10 steps for T = D = 10). The mean of N models then rests on the few largest
f_θi; ``effective_models`` = (Σ f_i)²/Σ f_i² counts them (10,000 models: ≈ 1,200, 110 and 13
at large σ after 1, 3 and 10 steps). Hence 3 steps by default, not 10.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import torch
from scipy.special import log_ndtr, ndtri_exp

from core.evaluation import bootstrap as stats
from core.bounds import (DEFAULT_ORDERS, compute_rdp, reconstruction_leakage, training_run,
                         traditional_leakage)
from core.bounds.reconstruction import LN2
from core.errors import UserError
from core.runtime import Cancelled, Progress, is_cancelled, no_progress
from core.specs import AttackSpec, check_params, param

# The paper's range σ ∈ [0.5, 10] in round values, with its example σ = 2.875 (§3.2).
DEFAULT_SIGMAS = (0.5, 1.0, 2.0, 2.875, 4.0, 6.0, 8.0, 10.0)
DEFAULT_STEPS = 3        # 10,000 models keep ≥ 100 effective models at every σ (module doc)
FEW_EFFECTIVE_MODELS = 30  # below, a handful of models carries the Monte Carlo mean
MAX_SIGMAS = 50
MAX_CELLS = 200_000_000  # models × digits × symbols: a few GB of float32 at most
OPACUS_NORM_EPS = 1e-6   # Opacus' clip factor is C / (‖g‖ + 1e-6)
BOOTSTRAP_BATCH = 100    # resamples of N models held in memory at once


@dataclass(frozen=True)
class NgramCanaryConfig:
    sigmas: tuple[float, ...] = training_run.sigma_param(
        DEFAULT_SIGMAS, unset=None, flags=("--sigma",), label="noise multipliers σ",
        help="noise multipliers σ to sweep (the learning rate is lr_scale/σ: no σ = 0)")
    steps: int = param(DEFAULT_STEPS, ge=1, le=100_000,
                       help="DP-SGD steps per model (q = 1: one step is one epoch); every step "
                            "spreads log f, so past ~3 steps 10,000 models no longer estimate "
                            "p1 reliably")
    models: int = param(10_000, ge=2, le=10_000_000, help="N models per σ for the Monte Carlo "
                                                         "estimate of p1")
    digits: int = param(10, ge=1, le=256, label="digits T", help="the canary's length T")
    symbols: int = param(10, ge=2, le=1000, label="symbols D",
                         help="the alphabet size D (p0 = D^-T)")
    clip: float = param(1.0, gt=0.0, le=1e6, label="clip C",
                        help="C, the per-sample gradient norm bound", page="advanced")
    lr_scale: float = param(0.5, gt=0.0, le=1e6, help="learning rate η = lr_scale / σ "
                                                      "(the paper: 0.5)", page="advanced")
    bootstrap: int = param(1000, ge=10, le=100_000, help="bootstrap resamples for the interval "
                                                         "on log p1", page="advanced")
    confidence: float = param(0.95, ge=0.5, lt=1.0, help="confidence of the interval",
                              page="advanced")
    record: Literal["canary", "digit"] = param(
        "canary", widget="radio", help="what one training record is: the whole canary (L(p0) "
        "of one record bounds the secret), or each digit (the paper's statistics)")
    seed: int = param(0, ge=0, le=2**31 - 1, help="draws the canary and the DP noise",
                      page="advanced")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one",
                                                   page="advanced")

    def __post_init__(self) -> None:
        check_params(self)
        if not 1 <= len(self.sigmas) <= MAX_SIGMAS:
            raise UserError(f"give 1 to {MAX_SIGMAS} noise multipliers σ, e.g. 0.5,1,2")
        if self.models * self.digits * self.symbols > MAX_CELLS:
            raise UserError(f"models × digits × symbols must stay below {MAX_CELLS:,}: "
                            "use fewer models or a shorter canary")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise UserError("device 'cuda' asked for, but no CUDA GPU is available: use 'cpu'")

    def torch_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    @property
    def secret_records(self) -> int:
        """How many training records the secret spans: 1, or T with one record per digit."""
        return self.digits if self.record == "digit" else 1

    @property
    def log_p0(self) -> float:
        """log p0 = −T log D (the canary is uniform over D^T sequences)."""
        return -self.digits * math.log(self.symbols)


@dataclass(frozen=True)
class SigmaPoint:
    """One σ of the sweep: the Monte Carlo leakage and the two bounds, all in bits (log2)."""

    sigma: float
    learning_rate: float
    log2_p1: float
    log2_p1_interval: tuple[float, float]
    empirical_leakage_bits: float               # log2(p1/p0)
    empirical_leakage_interval: tuple[float, float]
    bound_leakage_bits: float                   # L(p0) of one record, Stock et al. Eq. 3
    bound_alpha: float
    traditional_leakage_bits: float             # min_α h(α, p0) of one record, Mironov et al.
    traditional_alpha: float
    gap_bits: float                             # min(L(p0), log2 1/p0) − empirical leakage
    secret_bound_bits: float                    # L(p0) for all the secret's records (T·d_α)
    optimal_leakage_bits: float                 # the most any attack can leak (exact, GDP)
    mean_log2_f: float                          # mean and std of log2 f_θi(c) over the models
    std_log2_f: float
    effective_models: float                     # (Σ f_i)² / Σ f_i²: how many models carry p1
    train_seconds: float


@dataclass
class NgramCanaryResult:
    config: NgramCanaryConfig
    canary: list[int]
    prior_bits: float                           # log2(1/p0) = T log2 D: the full leak
    device: str
    points: list[SigmaPoint]
    seconds: float
    stopped_early: bool = False


def draw_canary(*, digits: int, symbols: int, seed: int) -> torch.Tensor:
    """The secret: T digits drawn uniformly from {0..D−1} (a fixed, seeded draw)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, symbols, (digits,), generator=generator)


def canary_log_prob(theta: torch.Tensor, canary: torch.Tensor) -> torch.Tensor:
    """log f_θ(c) = Σ_t log softmax(θ_t)[c_t] for every model: (T, D, N) -> (N,), in float64."""
    log_u = torch.log_softmax(theta.double(), dim=1)
    positions = torch.arange(canary.numel(), device=theta.device)
    return log_u[positions, canary.to(theta.device)].sum(0)


def dp_sgd_step(theta: torch.Tensor, onehot: torch.Tensor, *, clip: float, lr: float,
                noise: torch.Tensor, per_digit: bool = False) -> None:
    """One DP-SGD step (q = 1, the batch is the whole data set) on N models at once, in place.

    ``theta`` is laid out (T, D, N) so that the reductions over D run along contiguous rows of
    models (several times faster on CPU than (N, T, D)); ``onehot`` is (T, D, 1); ``noise``
    holds N(0, σ²C²) draws of θ's shape. θ ← θ − η (Σ_records clip_C(g_record) + noise);
    ``per_digit``: each row t is a record of its own, else the whole canary is one.
    """
    grad = torch.softmax(theta, dim=1).sub_(onehot)
    if per_digit:
        norms = torch.linalg.vector_norm(grad, dim=1, keepdim=True)
    else:
        norms = torch.linalg.vector_norm(grad.view(-1, grad.shape[-1]), dim=0)
    factor = (clip / (norms + OPACUS_NORM_EPS)).clamp_(max=1.0)
    grad.mul_(factor).add_(noise)
    theta.sub_(grad, alpha=lr)


def train_models(*, canary: torch.Tensor, symbols: int, sigma: float, steps: int, models: int,
                 clip: float, lr: float, seed: int, device: torch.device, per_digit: bool = False,
                 cancel: threading.Event | None = None,
                 on_step=None) -> torch.Tensor | None:
    """Train ``models`` n-gram models with DP-SGD from θ = 0; return log f_θi(c), shape (N,).

    Step k draws its noise as ``noise.normal_(0, σC)`` of shape (T, D, N) from a generator
    seeded with ``seed``; model i gets ``noise[:, :, i]``. Returns None when ``cancel`` is
    set before the last step. ``on_step(k)`` is called after every step k = 1..steps.
    """
    generator = torch.Generator(device=device).manual_seed(seed)
    onehot = torch.nn.functional.one_hot(canary.to(device), symbols).float()[:, :, None]
    theta = torch.zeros(canary.numel(), symbols, models, device=device)
    noise = torch.empty_like(theta)
    for step in range(1, steps + 1):
        if is_cancelled(cancel):
            return None
        noise.normal_(0.0, sigma * clip, generator=generator)
        dp_sgd_step(theta, onehot, clip=clip, lr=lr, noise=noise, per_digit=per_digit)
        if on_step is not None:
            on_step(step)
    return canary_log_prob(theta, canary)


def log_mean_exp(log_values: np.ndarray, axis: int = -1) -> np.ndarray | float:
    """log((1/N) Σ_i e^{x_i}) along ``axis``, computed stably in log space (Eq. 4)."""
    values = np.asarray(log_values, dtype=float)
    peak = values.max(axis=axis, keepdims=True)
    out = (peak + np.log(np.mean(np.exp(values - peak), axis=axis, keepdims=True))).squeeze(axis)
    return float(out) if out.ndim == 0 else out


def effective_sample_size(log_values: np.ndarray) -> float:
    """(Σ f_i)² / Σ f_i²: near N when all models agree, near 1 when one model dominates p1."""
    weights = np.exp(np.asarray(log_values, dtype=float) - np.max(log_values))
    return float(weights.sum() ** 2 / np.square(weights).sum())


def bootstrap_interval(log_values: np.ndarray, *, resamples: int, confidence: float,
                       seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of ``log_mean_exp`` (resampling the N models)."""
    low, high = stats.bootstrap_interval((np.asarray(log_values, dtype=float),), log_mean_exp,
                                         resamples=resamples, confidence=confidence, seed=seed,
                                         vectorized=True, batch=BOOTSTRAP_BATCH)
    return float(low), float(high)


def bounds_for(*, sigma: float, steps: int, log_p0: float, records: int = 1):
    """L(p0) and min_α h(α, p0) of DP-SGD with q = 1, σ and ``steps`` (same accountant), for a
    secret of ``records`` records whose clipped gradients are orthogonal (RDP × records)."""
    rdp = records * compute_rdp(q=1.0, noise_multiplier=sigma, steps=steps, orders=DEFAULT_ORDERS)
    return (reconstruction_leakage(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=log_p0),
            traditional_leakage(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=log_p0))


def optimal_leakage(*, sigma: float, steps: int, log_p0: float, records: int = 1) -> float:
    """max log(p1/p0) over all attacks: log Φ(Φ⁻¹(p0) + μ) − log p0, μ = √(steps·records)/σ.

    T steps of the full-batch Gaussian mechanism with sensitivity √records·C are μ-GDP, and
    the tradeoff function of μ-GDP caps the power p1 of any test with level p0 (Dong et al.).
    """
    mu = math.sqrt(steps * records) / sigma
    return float(log_ndtr(ndtri_exp(log_p0) + mu) - log_p0)


def summarize(log_f: np.ndarray, *, config: NgramCanaryConfig, sigma: float,
              train_seconds: float) -> SigmaPoint:
    """The Monte Carlo estimate, its interval and the bounds for one σ, converted to bits."""
    log_p0 = config.log_p0
    log_p1 = log_mean_exp(log_f)
    low, high = bootstrap_interval(log_f, resamples=config.bootstrap,
                                   confidence=config.confidence, seed=config.seed)
    bound, traditional = bounds_for(sigma=sigma, steps=config.steps, log_p0=log_p0)
    secret_bound, _ = bounds_for(sigma=sigma, steps=config.steps, log_p0=log_p0,
                                 records=config.secret_records)
    optimal = optimal_leakage(sigma=sigma, steps=config.steps, log_p0=log_p0,
                              records=config.secret_records)
    return SigmaPoint(
        sigma=sigma, learning_rate=config.lr_scale / sigma,
        log2_p1=log_p1 / LN2, log2_p1_interval=(low / LN2, high / LN2),
        empirical_leakage_bits=(log_p1 - log_p0) / LN2,
        empirical_leakage_interval=((low - log_p0) / LN2, (high - log_p0) / LN2),
        bound_leakage_bits=bound.bits, bound_alpha=bound.alpha,
        traditional_leakage_bits=traditional.bits, traditional_alpha=traditional.alpha,
        gap_bits=(min(bound.nats, -log_p0) - (log_p1 - log_p0)) / LN2,
        secret_bound_bits=secret_bound.bits, optimal_leakage_bits=optimal / LN2,
        mean_log2_f=float(np.mean(log_f)) / LN2, std_log2_f=float(np.std(log_f)) / LN2,
        effective_models=effective_sample_size(log_f),
        train_seconds=train_seconds,
    )


def run(config: NgramCanaryConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> NgramCanaryResult:
    """Train ``config.models`` models for every σ and compare log(p1/p0) with the bounds.

    Every σ uses the same noise seed (common random numbers: a smoother curve). When
    cancelled, returns the σ finished so far with ``stopped_early``; raises ``Cancelled``
    if none has finished.
    """
    started = time.perf_counter()
    sigmas = config.sigmas
    device = config.torch_device()
    canary = draw_canary(digits=config.digits, symbols=config.symbols, seed=config.seed)
    points: list[SigmaPoint] = []
    report_every = max(1, config.steps // 20)

    for index, sigma in enumerate(sigmas):
        def on_step(step: int, index: int = index, sigma: float = sigma) -> None:
            if step % report_every == 0:
                progress((index + step / config.steps) / len(sigmas),
                         f"sigma {sigma:g}: step {step}/{config.steps}")

        tic = time.perf_counter()
        log_f = train_models(canary=canary, symbols=config.symbols, sigma=sigma,
                             steps=config.steps, models=config.models, clip=config.clip,
                             lr=config.lr_scale / sigma, seed=config.seed, device=device,
                             per_digit=config.record == "digit", cancel=cancel, on_step=on_step)
        if log_f is None:
            break
        points.append(summarize(log_f.cpu().numpy(), config=config, sigma=sigma,
                                train_seconds=time.perf_counter() - tic))
        progress((index + 1) / len(sigmas), f"sigma {sigma:g} done",
                 partial=[asdict(p) for p in points])

    if not points and is_cancelled(cancel):
        raise Cancelled()
    return NgramCanaryResult(
        config=config, canary=canary.tolist(), prior_bits=-config.log_p0 / LN2, device=str(device),
        points=points, seconds=time.perf_counter() - started,
        stopped_early=len(points) < len(sigmas),
    )


def tiny_config() -> NgramCanaryConfig:
    return NgramCanaryConfig(sigmas=(1.0, 4.0), steps=20, models=500, bootstrap=100)


SPEC = AttackSpec(
    name="ngram-canary",
    title="Is the bound tight? (n-gram canary)",
    config_type=NgramCanaryConfig,
    result_type=NgramCanaryResult,
    run=run,
    tiny_config=tiny_config,
    headline=lambda r: {f"gap_bits at σ={p.sigma:g}": p.gap_bits for p in r.points},
    describe=lambda c: f"n-gram canary: {len(c.sigmas)} σ, {c.models:,} models, {c.steps} steps",
    table="points",
)
