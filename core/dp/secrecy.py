"""What DP fine-tuning measures (Stock et al. 2022, §4.3): the secrecy of the canary's digits
given its prompt, b = −log2 p1, against the prior log2(10^16) and the leakage the bound allows
for the same (σ, q, steps); and the validation perplexity, the utility it costs."""

from __future__ import annotations

import math

import numpy as np

from core.bounds import DEFAULT_ORDERS, compute_rdp, epsilon_balle, reconstruction_leakage
from core.models import LoadedModel
from core.scoring import score_texts, score_token_ids

PROMPT = "John Doe's credit card number is"  # the canary's prompt (Stock et al. §4.3)
SECRET_DIGITS = 16
LOG_P0 = -SECRET_DIGITS * math.log(10.0)          # p0 = 10^-16: a uniformly random secret
PRIOR_BITS = SECRET_DIGITS * math.log2(10.0)       # ≈ 53.15 bits
LN2 = math.log(2.0)


def secrecy_bits(lm: LoadedModel, canary_ids: list[int], secret_tokens: int) -> float:
    """b = −log2 p(secret | prompt): the last ``secret_tokens`` scores of prompt + secret."""
    scores = score_token_ids(lm, [canary_ids])[0]
    return -float(scores.logprobs[-secret_tokens:].sum(dtype=np.float64)) / LN2


def validation_perplexity(lm: LoadedModel, texts: list[str]) -> float:
    """exp(−mean log-prob) over every token of the held-out texts."""
    scores = score_texts(lm, texts)
    total = sum(s.total_logprob for s in scores)
    return math.exp(-total / max(1, sum(s.n_scored for s in scores)))


def bound_at(sigma: float, q: float, step: int, repeats: int, delta: float) -> dict:
    """Allowed leakage (bits) of one record and of the canary's copies, and ε, after ``step``."""
    if sigma == 0:
        return {"allowed_bits": None, "group_allowed_bits": None, "epsilon": None}
    if step == 0:
        return {"allowed_bits": 0.0, "group_allowed_bits": 0.0, "epsilon": 0.0}
    rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=step, orders=DEFAULT_ORDERS)
    group = compute_rdp(q=1.0, noise_multiplier=sigma / repeats, steps=step, orders=DEFAULT_ORDERS)
    return {
        "allowed_bits": min(reconstruction_leakage(orders=DEFAULT_ORDERS, rdp=rdp, log_p0=LOG_P0).bits, PRIOR_BITS),
        "group_allowed_bits": min(reconstruction_leakage(orders=DEFAULT_ORDERS, rdp=group, log_p0=LOG_P0).bits,
                                  PRIOR_BITS),
        "epsilon": epsilon_balle(orders=DEFAULT_ORDERS, rdp=rdp, delta=delta)[0],
    }
