"""Memorisation in bits for people: the rows of the pairs and of the easiest windows (the page
and the audit report draw the same), and p_z and n as shown. A stored run reads a non-finite
float back as None (``core.serialize``), so −inf (a suffix outside the sampling scheme's
support) and an infinite n read "−inf" and "never" whether fresh or stored; extraction's
views show them so too."""

from __future__ import annotations

import math

from core.attacks.inextractability.prior import exceeds
from core.calibration.public import public_label


def samples_shown(n: float | None) -> str:
    """The samples n for P ≥ p: "never" when p_z = 0 (None once stored)."""
    return "never" if n is None or math.isinf(n) else f"{n:,.0f}" if n < 1e15 else f"{n:.2e}"


def log2_shown(value: float | None) -> str:
    """log2 p_z to 3 decimals, "−inf" outside the sampling scheme's support (None once stored);
    text either way, so that a table's column has one type."""
    return "−inf" if value is None or math.isinf(value) else f"{value:.3f}"


def pair_rows(result) -> list[dict]:
    """Each phrase and prefix/suffix pair of an ``InextractabilityResult``: b, p_z, n, the
    model's own log2 p, the worst rank and L(p0) for b bits (None without σ); with a reference,
    the prior's log2 p0, the bits learnt, L(p0) of the prior and whether they pass it."""
    return [{"prefix": p.prefix or "(start of a text)", "suffix": p.suffix,
             "tokens": p.suffix_tokens, "b (bits)": round(p.b, 3),
             "log2 p_z": log2_shown(p.log2_p),
             f"samples for P ≥ {result.probability:g}": samples_shown(p.samples_50),
             "log2 p (model)": round(p.log2_p_model, 3), "worst rank": p.max_rank,
             "L(p0) for b bits": _rounded(p.dp_bound_bits)} | _prior_cells(p)
            for p in result.pairs]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _prior_cells(pair) -> dict:
    """The prior's columns (``prior.with_prior``), none without a reference."""
    if pair.log2_p_reference is None:
        return {}
    passed = exceeds(pair)
    return {"log2 p0 (reference)": round(pair.log2_p_reference, 3),
            "bits learnt": round(pair.learnt_bits, 3),
            "L(p0) of the prior": _rounded(pair.prior_bound_bits),
            "learnt > L(p0)": "—" if passed is None else "yes" if passed else "no"}


def record_rows(result) -> list[dict]:
    """The easiest windows of an ``InextractabilityResult``, smallest b first."""
    return [{"b (bits)": round(r.b, 3), "log2 p_z": log2_shown(r.log2_p),
             f"samples for P ≥ {result.probability:g}": samples_shown(r.samples_50),
             "window": r.text, "text #": r.record, "copies": r.copies,
             "greedy windows": f"{r.greedy_windows} of {r.windows}"}
            | ({"public sample": public_label(r.public)} if r.public else {})
            for r in result.records]
