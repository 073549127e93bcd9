"""The canary audit on the n-gram Monte Carlo (Stock et al. 2022, §4.1): a DP mechanism whose
accountant is exact in form, one trained model per canary trial, in seconds
(``python -m core dp-audit --ngram --sigma 1 --q 1 --steps 3 --models 10000``).

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
import threading

import numpy as np
import torch

from core.dp.audit import DpAuditConfig, DpAuditResult, NgramTrials, audit_scores, run_epsilons
from core.dp.ngram_canary import canary_log_prob, draw_canary, train_models
from core.runtime import Cancelled, Progress, no_progress, share

DIGITS, SYMBOLS = 10, 10      # the canary: T digits of an alphabet of D (the paper's T = D = 10)
CLIP, LR_SCALE = 1.0, 0.5     # C and η = 0.5/σ, as ``ngram-canary``'s defaults (the paper's)


def ngram_trials(*, sigma: float, steps: int, models: int, seed: int = 0,
                 progress: Progress = no_progress,
                 cancel: threading.Event | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scores log f_θ(c), members) of ``models`` independent trials (module doc), on the CPU;
    ``Cancelled`` when stopped before the last step."""
    device = torch.device("cpu")
    members = np.random.default_rng(seed).random(models) < 0.5
    canary = draw_canary(digits=DIGITS, symbols=SYMBOLS, seed=seed)
    lr, every = LR_SCALE / sigma, max(1, steps // 20)

    def on_step(step: int) -> None:
        if step % every == 0:
            progress(step / steps, f"σ = {sigma:g}: step {step}/{steps}")

    trained = train_models(canary=canary, symbols=SYMBOLS, sigma=sigma, steps=steps,
                           models=int(members.sum()), clip=CLIP, lr=lr, seed=seed, device=device,
                           cancel=cancel, on_step=on_step)
    if trained is None:
        raise Cancelled()
    generator = torch.Generator().manual_seed(seed + 1)
    noise_only = torch.normal(0.0, lr * sigma * CLIP * math.sqrt(steps),
                              (DIGITS, SYMBOLS, int((~members).sum())), generator=generator)
    scores = np.empty(models)
    scores[members] = trained.numpy()
    scores[~members] = canary_log_prob(noise_only, canary).numpy()
    return scores, members


def audit_ngram(config: DpAuditConfig, *, progress: Progress = no_progress,
                cancel: threading.Event | None = None) -> DpAuditResult:
    """Audit ``config.models`` n-gram trials at the config's σ and steps (q = 1), with the
    accountant's ε of the same mechanism beside the bounds."""
    scores, members = ngram_trials(sigma=config.sigma, steps=config.steps, models=config.models,
                                   seed=config.seed, cancel=cancel,
                                   progress=share(progress, 0.0, 0.5, "training: "))
    known = run_epsilons(sigma=config.sigma, q=1.0, steps=config.steps, delta=config.delta)
    result = audit_scores(scores, members, delta=config.delta, confidence=config.confidence,
                          methods=config.methods, seed=config.seed,
                          threshold=config.threshold, **known,
                          progress=share(progress, 0.5, 1.0, "audit: "), cancel=cancel)
    result.trials = NgramTrials(config.sigma, config.steps, config.models, DIGITS, SYMBOLS)
    return result
