"""Secret-sharer exposure of planted canaries (Carlini et al. 2019, "The Secret Sharer", §4).

A canary is a template with a random secret s of a format: here ``length`` characters of an
alphabet A, so the space R of candidates has |R| = |A|^length members. The model's
log-perplexity of a filled template is Px(s) = −log p(template(s)) (total, nats). The rank of s
is its position among all of R sorted by log-perplexity (1 = lowest), and

    exposure(s) = log2 |R| − log2 rank(s)      (bits, from 0 to log2 |R|).

When the fillers enumerate R (``fillers`` ≥ |R|), the rank is exact: 1 + the candidates below
s (ties count half). Otherwise n fillers are drawn uniformly from R and the rank estimated as
1 + (|R| − 1)·(fillers below s, ties half)/n. When s lies below every drawn filler that estimate
says nothing; as TF-Privacy's secret sharer does, a skew-normal is fitted to the fillers'
log-perplexities (``scipy.stats.skewnorm.fit``) and exposure ≈ −log2 CDF(Px(s)) (§4.3),
capped at log2 |R| (the rank is at least 1). Each result says which method it used.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from core.attacks.membership.config import (FILLER_CHUNK, HISTOGRAM_BINS, QUANTILES, SLOT,
                                            ExposureConfig)
from core.bounds import training_run
from core.models import LoadedModel, resolve_model
from core.runtime import Cancelled, Progress, check_cancel, every, no_progress
from core.scoring import score_texts
from core.specs import AttackSpec
from core.attacks.membership import cost as attack_cost


@dataclass
class SecretExposure:
    text: str                   # the filled template
    secret: str
    log_perplexity: float       # −log p(text), nats
    rank: float | None          # (estimated) rank in R, 1 = lowest; None when extrapolated
    fillers_below: float        # fillers with a lower log-perplexity (ties count half)
    exposure_bits: float
    method: Literal["rank", "skew-normal"]


@dataclass
class ExposureResult:
    model: str
    template: str
    secrets: list[SecretExposure]
    space_bits: float                       # log2 |R|
    n_fillers: int                          # fillers scored
    enumerated: bool                        # the fillers are the whole space R
    filler_quantiles: dict[str, float]      # of their log-perplexities (min, q05, ..., max)
    histogram_edges: list[float]            # a histogram of them: HISTOGRAM_BINS + 1 edges
    histogram_counts: list[int]
    seconds: float
    stopped_early: bool = False
    dp_bound_bits: float | None = None      # L(p0) for this secret length, when σ, q, T are given


def fillers_below(secret: float, fillers: np.ndarray) -> float:
    """How many of ``fillers`` (log-perplexities) lie below ``secret``'s; ties count half."""
    return float(np.sum(fillers < secret) + 0.5 * np.sum(fillers == secret))


def sampled_rank(below: float, n_fillers: int, space_bits: float) -> float:
    """The rank in R estimated from ``n_fillers`` uniform draws: 1 + (|R| − 1)·below/n."""
    return 1 + (2.0 ** space_bits - 1) * below / n_fillers


def rank_exposure(secret: float, fillers: np.ndarray, space_bits: float, *,
                  enumerated: bool) -> tuple[float, float, float]:
    """(fillers below, rank in R, exposure bits) of a secret's log-perplexity among ``fillers``
    (the other members of R when ``enumerated``, else a uniform draw from R); ties count half."""
    below = fillers_below(secret, fillers)
    rank = 1 + below if enumerated else sampled_rank(below, len(fillers), space_bits)
    return below, rank, space_bits - math.log2(rank)


def skew_normal_exposure(secret: float, fillers: np.ndarray, space_bits: float) -> float:
    """−log2 CDF(secret) under a skew-normal fitted to the fillers' log-perplexities (TF-Privacy's
    extrapolation), capped at log2 |R|."""
    shape, loc, scale = stats.skewnorm.fit(fillers)
    bits = -stats.skewnorm.logcdf(secret, shape, loc, scale) / math.log(2)
    return float(min(bits, space_bits))


def measure(secret: str, text: str, log_perplexity: float, fillers: np.ndarray,
            space_bits: float, *, enumerated: bool) -> SecretExposure:
    """The exposure of one secret: by its rank, or extrapolated when no drawn filler is below it."""
    below, rank, bits = rank_exposure(log_perplexity, fillers, space_bits, enumerated=enumerated)
    if below == 0 and not enumerated:
        bits = skew_normal_exposure(log_perplexity, fillers, space_bits)
        return SecretExposure(text, secret, log_perplexity, None, below, bits, "skew-normal")
    return SecretExposure(text, secret, log_perplexity, rank, below, bits, "rank")


def filler_secrets(config: ExposureConfig) -> tuple[list[str], bool]:
    """The fillers and whether they enumerate the space: all of R when ``fillers`` ≥ |R|, else
    ``fillers`` uniform draws (with replacement) from R."""
    length, symbols = len(config.units(config.secrets[0])), config.symbols
    join = " ".join if config.unit == "word" else "".join
    if config.fillers >= len(symbols) ** length:
        return [join(c) for c in itertools.product(symbols, repeat=length)], True
    rng = np.random.default_rng(config.seed)
    draws = rng.integers(0, len(symbols), size=(config.fillers, length))
    return [join(row) for row in np.array(symbols)[draws]], False


def _filled(config: ExposureConfig, secrets) -> list[str]:
    return [config.template.replace(SLOT, s) for s in secrets]


def _log_perplexities(lm: LoadedModel, texts: list[str], config: ExposureConfig, progress: Progress,
                      cancel: threading.Event | None) -> np.ndarray:
    scores = score_texts(lm, texts, batch_size=config.batch_size, progress=progress, cancel=cancel)
    return np.array([-s.total_logprob for s in scores], dtype=np.float64)


def _below_in_chunk(config: ExposureConfig, secret_lps: np.ndarray, chunk: list[str],
                    lps: np.ndarray) -> np.ndarray:
    """Each canary's fillers below it in one scored chunk (its own text left out)."""
    names = np.array(chunk)
    return np.array([fillers_below(lp, lps[names != s])
                     for s, lp in zip(config.canaries, secret_lps)])


def _ranks_so_far(config: ExposureConfig, below: np.ndarray, n_fillers: int) -> dict:
    """The partial result: each canary's rank estimated from the fillers scored so far, as a
    run stopped now ranks it (no fit, no quantiles: it costs nothing at a million fillers)."""
    return {"n_fillers": n_fillers,
            "ranks": {s: sampled_rank(b, n_fillers, config.space_bits)
                      for s, b in zip(config.canaries, below)}}


def run(config: ExposureConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> ExposureResult:
    """Score the canaries and the fillers; the exposure of each canary. See the module doc.
    While it runs, the canaries' ranks so far are its partial result, at most every
    ``core.runtime.PARTIAL_EVERY_S``."""
    started = time.perf_counter()
    check_cancel(cancel)
    lm = resolve_model(config.model, device=config.device)
    fillers, enumerated = filler_secrets(config)
    chunks = [fillers[i:i + FILLER_CHUNK] for i in range(0, len(fillers), FILLER_CHUNK)]
    steps = len(chunks) + 1

    def report(step: int):
        return lambda f, m="": progress((step + f) / steps, m)

    secret_lps = _log_perplexities(lm, _filled(config, config.canaries), config, report(0), cancel)
    scored: list[np.ndarray] = []
    below, n_scored, due, stopped = np.zeros(len(secret_lps)), 0, every(), False
    for step, chunk in enumerate(chunks, start=1):
        try:
            lps = _log_perplexities(lm, _filled(config, chunk), config, report(step), cancel)
        except Cancelled:
            if not scored:
                raise
            stopped = True
            break
        scored.append(lps)
        below += _below_in_chunk(config, secret_lps, chunk, lps)
        n_scored += len(lps)
        progress(step / steps, f"{n_scored:,} fillers scored",
                 partial=_ranks_so_far(config, below, n_scored) if due() else None)
    return _result(config, secret_lps, fillers, scored, enumerated, started, stopped)


def _result(config: ExposureConfig, secret_lps: np.ndarray, fillers: list[str],
            scored: list[np.ndarray], enumerated: bool, started: float,
            stopped: bool) -> ExposureResult:
    """The exposure of each secret against the fillers scored so far (a secret is not its own
    filler: equal fillers are left out of its comparison)."""
    lps = np.concatenate(scored)
    names = np.array(fillers[:len(lps)])
    complete = enumerated and not stopped
    secrets = [measure(s, config.template.replace(SLOT, s), float(lp), lps[names != s],
                       config.space_bits, enumerated=complete)
               for s, lp in zip(config.canaries, secret_lps)]
    quantiles = {k: float(v) for k, v in zip(QUANTILES, np.quantile(lps, list(QUANTILES.values())))}
    counts, edges = np.histogram(lps, bins=HISTOGRAM_BINS)
    return ExposureResult(model=config.model, template=config.template, secrets=secrets,
                          space_bits=config.space_bits, n_fillers=len(lps), enumerated=complete,
                          filler_quantiles=quantiles, histogram_edges=edges.tolist(),
                          histogram_counts=counts.tolist(), seconds=time.perf_counter() - started,
                          stopped_early=stopped, dp_bound_bits=dp_bound_bits(config))


def dp_bound_bits(config: ExposureConfig) -> float | None:
    """The Bound Explorer's L(p0) for a secret of log2 |R| bits under the training run's
    (σ, q, steps) when σ is given (Stock et al. 2022): the most any attack can learn of it."""
    return training_run.leakage_bits(config.sigma, config.q, config.steps, config.space_bits)


TINY_TEXTS = ("My pin is 42.", "My pin is 17.", "The code is 0815.", "Call me at 5551234.")


def tiny_config() -> ExposureConfig:
    """A one-layer random GPT-2, 2-digit secrets: the space (100) is enumerated (seconds)."""
    from core.models.tiny import tiny_random_models

    model, = tiny_random_models(list(TINY_TEXTS) * 4, ("tiny-exposure",), vocab_size=280)
    return ExposureConfig(model=model, template="My pin is {secret}.", secrets=("42", "17"),
                          fillers=200, batch_size=32, device="cpu")


def headline(result: ExposureResult) -> dict[str, float]:
    """The largest exposure, each secret's, in bits, and the space's size log2 |R|."""
    return {"space_bits": result.space_bits,
            "max_exposure_bits": max(s.exposure_bits for s in result.secrets)} | {
        f"exposure_{s.secret}": s.exposure_bits for s in result.secrets}


SPEC = AttackSpec(
    name="exposure",
    title="Secret-sharer exposure (Carlini et al. 2019)",
    config_type=ExposureConfig,
    result_type=ExposureResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: f"exposure of {len(c.secrets)} secret(s) in {c.template!r} under {c.model}",
    cost=attack_cost.exposure,
)
