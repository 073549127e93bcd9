"""Golden values for ``core.bounds.last_iterate`` from dp_accounting's mixture-of-Gaussians
privacy loss distribution (``from_mixture_gaussian_mechanism``): the last iterate of T steps of
Poisson-sampled noisy SGD on one record is N(K, σ²T) with K ~ Binomial(T, q) against N(0, σ²T)
(Steinke et al., ICLR 2025), whose ε at δ the PLD reads. Tens of seconds a case, hence a file;
the dp_accounting version is written into it. Writes ``last_iterate.json`` beside this script.

    python tests/support/golden/make_last_iterate.py
"""

from __future__ import annotations

import json
import math
from importlib.metadata import version
from pathlib import Path

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats

OUT = Path(__file__).with_name("last_iterate.json")
DELTA = 1e-5
# (σ, q, T): one step, a rare large shift (σ = 0.5), one and ten epochs, the demo's run
SETTINGS = [(1.0, 0.01, 1), (0.5, 0.01, 10), (1.0, 0.01, 1000), (1.0, 2.81e-4, 186_000),
            (2.0, 0.05, 200), (0.8, 0.1, 50)]


def mixture_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """ε at ``delta`` of N(K, σ²T), K ~ Binomial(T, q), against N(0, σ²T) (add or remove)."""
    k = np.arange(steps + 1)
    w = stats.binom.pmf(k, steps, q)
    kept = w > 1e-18
    loss = pld.from_mixture_gaussian_mechanism(
        standard_deviation=sigma * math.sqrt(steps), sensitivities=k[kept].astype(float).tolist(),
        sampling_probs=(w[kept] / w[kept].sum()).tolist())
    return loss.get_epsilon_for_delta(delta)


def main() -> None:
    cases = [{"sigma": s, "q": q, "steps": t, "delta": DELTA,
              "epsilon": mixture_epsilon(s, q, t, DELTA)} for s, q, t in SETTINGS]
    OUT.write_text(json.dumps({"reference": "dp_accounting.pld.privacy_loss_distribution."
                                            "from_mixture_gaussian_mechanism",
                               "dp_accounting": version("dp-accounting"), "cases": cases},
                              indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
