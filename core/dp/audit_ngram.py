"""The canary audit on the n-gram Monte Carlo (Stock et al. 2022, §4.1): a DP mechanism whose
accountant is exact in form, one trained model per canary trial, in seconds.

Trial i flips a fair coin: heads, model i is trained with DP-SGD (q = 1, σ, ``steps``) on the
data set {c} (the canary c is its one record, ``core.dp.ngram_canary.train_models``); tails,
on the empty data set, where every step adds only the noise: θ = −η Σ_k N(0, σ²C²) =
N(0, steps·η²σ²C²) per parameter. The attack's score is log f_θ(c). Both data sets differ by
one record, so each trial is an (ε, δ)-DP release with ε the accountant's for (σ, q = 1, steps),
and the trials are independent: every bound of ``core.dp.audit_bounds`` applies, and an audited
ε above the accountant's would expose a bug in the training, the accountant or the auditor.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from core.dp.audit import DpAuditResult, accountant_epsilon, audit_scores
from core.dp.ngram_canary import canary_log_prob, draw_canary, train_models


def ngram_trials(*, sigma: float, steps: int, models: int, digits: int = 10, symbols: int = 10,
                 clip: float = 1.0, lr_scale: float = 0.5,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(scores log f_θ(c), members) of ``models`` independent trials (module doc), on the CPU."""
    device = torch.device("cpu")
    members = np.random.default_rng(seed).random(models) < 0.5
    canary = draw_canary(digits=digits, symbols=symbols, seed=seed)
    lr = lr_scale / sigma
    trained = train_models(canary=canary, symbols=symbols, sigma=sigma, steps=steps,
                           models=int(members.sum()), clip=clip, lr=lr, seed=seed, device=device)
    generator = torch.Generator().manual_seed(seed + 1)
    noise_only = torch.normal(0.0, lr * sigma * clip * math.sqrt(steps),
                              (digits, symbols, int((~members).sum())), generator=generator)
    scores = np.empty(models)
    scores[members] = trained.numpy()
    scores[~members] = canary_log_prob(noise_only, canary).numpy()
    return scores, members


def audit_ngram(*, sigma: float, steps: int, models: int, delta: float = 1e-5,
                confidence: float = 0.95, seed: int = 0) -> DpAuditResult:
    """Audit ``models`` n-gram trials at σ and set the accountant's ε (q = 1) beside the bounds."""
    scores, members = ngram_trials(sigma=sigma, steps=steps, models=models, seed=seed)
    upper = accountant_epsilon(sigma=sigma, q=1.0, steps=steps, delta=delta)
    return audit_scores(scores, members, delta=delta, confidence=confidence, seed=seed,
                        epsilon_upper=upper)
