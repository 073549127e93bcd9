"""Golden values for ``core.bounds.last_iterate``, from three references:

- ``cases``: dp_accounting's mixture-of-Gaussians privacy loss distribution
  (``from_mixture_gaussian_mechanism``): the last iterate of T steps of Poisson-sampled noisy
  SGD on one record is N(K, σ²T) with K ~ Binomial(T, q) against N(0, σ²T) (Steinke et al.,
  ICLR 2025), whose ε at δ the PLD reads;
- ``divergence``: the hockey-stick divergence of those two at ε, max over both directions of
  ∫ (p − e^ε q)₊, by scipy's adaptive quadrature on a fine grid of intervals (no crossing point
  used);
- ``composed``: DP-SGD's tight composed ε, dp_accounting's PLD accountant (add or remove).

Seconds to tens of seconds a case, hence a file; the library versions are written into it.
Writes ``last_iterate.json`` beside this script.

    python tests/support/golden/make_last_iterate.py
"""

from __future__ import annotations

import json
import math
from importlib.metadata import version
from pathlib import Path

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import integrate, stats

OUT = Path(__file__).with_name("last_iterate.json")
DELTA = 1e-5
# (σ, q, T): one step, a rare large shift (σ = 0.5), one and ten epochs, the demo's run
SETTINGS = [(1.0, 0.01, 1), (0.5, 0.01, 10), (1.0, 0.01, 1000), (1.0, 2.81e-4, 186_000),
            (2.0, 0.05, 200), (0.8, 0.1, 50)]
# (ε, σ, q, T) of the divergence's quadrature
DIVERGENCE = [(0.1, 1.0, 0.1, 1), (0.5, 1.0, 0.05, 20), (1.0, 0.5, 0.01, 10), (2.0, 0.8, 0.3, 5)]
# (σ, q, T) of the composed ε: one step, and ten epochs
COMPOSED = [(1.0, 0.01, 1), (0.5, 0.1, 1), (2.0, 0.001, 1),
            (2.0, 0.01, 1000), (1.0, 0.01, 1000), (0.5, 0.01, 1000), (1.0, 0.001, 10_000)]


def mixture_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """ε at ``delta`` of N(K, σ²T), K ~ Binomial(T, q), against N(0, σ²T) (add or remove)."""
    k = np.arange(steps + 1)
    w = stats.binom.pmf(k, steps, q)
    kept = w > 1e-18
    loss = pld.from_mixture_gaussian_mechanism(
        standard_deviation=sigma * math.sqrt(steps), sensitivities=k[kept].astype(float).tolist(),
        sampling_probs=(w[kept] / w[kept].sum()).tolist())
    return loss.get_epsilon_for_delta(delta)


def divergence(epsilon: float, sigma: float, q: float, steps: int) -> float:
    """max over both directions of ∫ (p − e^ε q)₊ of the mixture p and the Gaussian q."""
    k = np.arange(steps + 1)
    w = stats.binom.pmf(k, steps, q)
    s = sigma * math.sqrt(steps)
    p = lambda x: float(np.sum(w * stats.norm.pdf(x, k, s)))
    g = lambda x: float(stats.norm.pdf(x, 0, s))
    edges = np.linspace(-12 * s, steps * q + 12 * s + 12 * math.sqrt(steps * q + 1), 400)
    total = lambda f: sum(integrate.quad(f, a, b, epsabs=0, epsrel=1e-10, limit=200)[0]
                          for a, b in zip(edges, edges[1:]))
    return max(total(lambda x: max(p(x) - math.exp(epsilon) * g(x), 0.0)),
               total(lambda x: max(g(x) - math.exp(epsilon) * p(x), 0.0)))


def composed_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """DP-SGD's tight composed ε: dp_accounting's PLD accountant (add or remove)."""
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.PoissonSampledDpEvent(
        q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return accountant.get_epsilon(delta)


def main() -> None:
    cases = [{"sigma": s, "q": q, "steps": t, "delta": DELTA,
              "epsilon": mixture_epsilon(s, q, t, DELTA)} for s, q, t in SETTINGS]
    divergences = [{"epsilon": e, "sigma": s, "q": q, "steps": t,
                    "divergence": divergence(e, s, q, t)} for e, s, q, t in DIVERGENCE]
    composed = [{"sigma": s, "q": q, "steps": t, "delta": DELTA,
                 "epsilon": composed_epsilon(s, q, t, DELTA)} for s, q, t in COMPOSED]
    OUT.write_text(json.dumps({
        "reference": "dp_accounting.pld.privacy_loss_distribution.from_mixture_gaussian_mechanism",
        "divergence_reference": "scipy.integrate.quad over 399 intervals, epsrel 1e-10",
        "composed_reference": "dp_accounting.pld.PLDAccountant, value_discretization_interval 1e-4",
        "dp_accounting": version("dp-accounting"), "scipy": version("scipy"), "cases": cases,
        "divergence": divergences, "composed": composed}, indent=1) + "\n")
    print(f"wrote {len(cases) + len(divergences) + len(composed)} cases to {OUT}")


if __name__ == "__main__":
    main()
