"""Memorisation in bits for people: the rows of the pairs and of the easiest windows (the page
and the audit report draw the same), and p_z and n as shown. A stored run reads a non-finite
float back as None (``core.serialize``), so −inf (a suffix outside the sampling scheme's
support) and an infinite n read "−inf" and "never" whether fresh or stored; extraction's
views show them so too."""

from __future__ import annotations

import math


def samples_shown(n: float | None) -> str:
    """The samples n for P ≥ p: "never" when p_z = 0 (None once stored)."""
    return "never" if n is None or math.isinf(n) else f"{n:,.0f}" if n < 1e15 else f"{n:.2e}"


def log2_shown(value: float | None) -> str:
    """log2 p_z to 3 decimals, "−inf" outside the sampling scheme's support (None once stored);
    text either way, so that a table's column has one type."""
    return "−inf" if value is None or math.isinf(value) else f"{value:.3f}"


def pair_rows(result) -> list[dict]:
    """Each phrase and prefix/suffix pair of an ``InextractabilityResult``: b, p_z, n, the
    model's own log2 p, the worst rank and L(p0) for b bits (None without σ)."""
    return [{"prefix": p.prefix or "(start of a text)", "suffix": p.suffix,
             "tokens": p.suffix_tokens, "b (bits)": round(p.b, 3),
             "log2 p_z": log2_shown(p.log2_p),
             f"samples for P ≥ {result.probability:g}": samples_shown(p.samples_50),
             "log2 p (model)": round(p.log2_p_model, 3), "worst rank": p.max_rank,
             "L(p0) for b bits": None if p.dp_bound_bits is None else round(p.dp_bound_bits, 3)}
            for p in result.pairs]


def record_rows(result) -> list[dict]:
    """The easiest windows of an ``InextractabilityResult``, smallest b first."""
    return [{"b (bits)": round(r.b, 3), "log2 p_z": log2_shown(r.log2_p),
             f"samples for P ≥ {result.probability:g}": samples_shown(r.samples_50),
             "window": r.text, "text #": r.record, "copies": r.copies,
             "greedy windows": f"{r.greedy_windows} of {r.windows}"} for r in result.records]
