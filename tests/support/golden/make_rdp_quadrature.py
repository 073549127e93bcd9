"""Golden values for ``core.bounds.compute_rdp`` at fractional orders: log A_α of the sampled
Gaussian by mpmath's tanh-sinh quadrature at 50 digits,

    log A_α = log(1 + E_{z~N(0,σ²)}[(1+u)^α − 1 − αu]),  u = q(e^{(2z−1)/(2σ²)} − 1)

(Mironov et al. 2019, Sec. 3.3): the integrand is non-negative, so no cancellation is to fear.
The cases are the paper's sampling rate at three σ and five orders, then other regimes (large q,
tiny σ with a huge likelihood ratio, q = 1e-8 at α = 1.0001), and order 2 at two settings, where
A_2 = 1 + q²(e^{1/σ²} − 1) in closed form checks the quadrature itself. Seconds a case, hence a
file; the mpmath version is written into it. Writes ``rdp_quadrature.json`` beside this script.

    python tests/support/golden/make_rdp_quadrature.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import mpmath as mp

OUT = Path(__file__).with_name("rdp_quadrature.json")
DIGITS = 50
# (q, σ) -> orders
CASES = {
    (2.81e-4, 0.5): [1.02, 1.05, 1.5, 2.5, 7.3],
    (2.81e-4, 1.0): [1.02, 1.05, 1.5, 2.5, 7.3],
    (2.81e-4, 3.0): [1.02, 1.05, 1.5, 2.5, 7.3],
    (0.01, 0.7): [1.05, 3.5],
    (0.5, 0.4): [1.02, 5.5],
    (0.9, 2.0): [1.3],
    (0.01, 0.1): [10.9],
    (1e-8, 0.3): [1.0001],
}
ORDER_TWO = [(2.81e-4, 3.0), (0.5, 0.4)]   # the closed form's settings


def mp_log_a(q: float, sigma: float, alpha: float) -> float:
    """log A_α by quadrature of the non-negative integrand at ``DIGITS`` digits."""
    with mp.workdps(DIGITS):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

        def integrand(z):
            u = q * mp.expm1((2 * z - 1) / (2 * s**2))
            return ((1 + u) ** a - 1 - a * u) * mp.exp(-(z**2) / (2 * s**2))

        # The mass lies between the peaks near z = 0..2 and z = α, each of width σ.
        breaks = [-14 * s, 0, 1, 2, max(a, 2) + 14 * s]
        return float(mp.log1p(mp.quad(integrand, breaks) / (s * mp.sqrt(2 * mp.pi))))


def main() -> None:
    rows = [{"q": q, "sigma": sigma, "alpha": alpha, "log_a": mp_log_a(q, sigma, alpha)}
            for (q, sigma), alphas in CASES.items() for alpha in alphas]
    order_two = [{"q": q, "sigma": sigma, "alpha": 2.0, "log_a": mp_log_a(q, sigma, 2.0)}
                 for q, sigma in ORDER_TWO]
    OUT.write_text(json.dumps({"reference": f"mpmath.quad (tanh-sinh) at {DIGITS} digits",
                               "mpmath": version("mpmath"), "cases": rows,
                               "order_two": order_two}, indent=1) + "\n")
    print(f"wrote {len(rows) + len(order_two)} cases to {OUT}")


if __name__ == "__main__":
    main()
