"""What the audit takes of memorisation in bits: the model, the training corpus (every l-token
window of it; the demo preset adds its canaries and secret as phrases and pairs) and the
training run's σ, q and steps (L(p0) beside each b); its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations

import html

from core.attacks.inextractability.prior import exceeds
from core.attacks.inextractability.views import pair_rows, record_rows
from core.reporting.html import short, table
from core.specs import AuditHooks

WINDOWS_SHOWN = 10   # the easiest windows the report lists


def verdict(result) -> str:
    greedy = ("" if result.greedy_fraction is None else
              f"; {result.greedy_fraction:.1%} of its {result.windows:,} windows are "
              "greedy-extractable (every token the model's first choice)")
    bound = ("" if result.dp_bound_bits is None else
             f" The training run's DP-SGD lets an attack learn at most L(p0) = "
             f"{result.dp_bound_bits:.2f} bits of a secret of b bits.")
    return (f"The easiest {result.window}-token window of the training text costs b = "
            f"{result.b:.2f} bits to extract (m = {result.rank_threshold}; Liu, Evans & Xiong "
            f"2026){greedy}.{bound}{beyond_bound(result)}")


def beyond_bound(result) -> str:
    """The phrases and pairs that gained more bits since the reference than L(p0) of their
    prior allows ("" when none, or without a reference and σ)."""
    over = [p for p in result.pairs if exceeds(p)]
    if not over:
        return ""
    worst = max(over, key=lambda p: p.learnt_bits - p.prior_bound_bits)
    return (f" {len(over)} of its {len(result.pairs)} phrases and pairs gained more bits since "
            f"the reference than the run's DP-SGD allows, e.g. “{short(worst.suffix, 60)}”: "
            f"{worst.learnt_bits:.1f} bits learnt, L(p0) = {worst.prior_bound_bits:.1f}.")


def section(result) -> str:
    """b, the greedy fraction and L(p0); each phrase's and pair's b and p_z; the easiest
    windows."""
    bound = "—" if result.dp_bound_bits is None else f"{result.dp_bound_bits:.2f}"
    greedy = "—" if result.greedy_fraction is None else f"{result.greedy_fraction:.2%}"
    head = table(("b (bits)", "greedy-extractable windows", "L(p0) for b bits", "windows",
                  "texts (shorter than l)", "p_z's sampling"),
                 [(f"{result.b:.2f}", greedy, bound, f"{result.windows:,}",
                   f"{result.texts:,} ({result.skipped:,})", result.sampler)])
    pairs = pair_rows(result)
    records = record_rows(result)[:WINDOWS_SHOWN]
    return (head + f"<p class='muted'>{html.escape(result.dp_note)}. A token of rank r ≤ m "
            "costs log2 r bits, else −log2 p; p_z: the chance one sample reproduces the text "
            "(Hayes et al. 2025).</p>"
            + ("<h3>Phrases and prefix/suffix pairs</h3>"
               + table(list(pairs[0]), [[short(str(v)) for v in r.values()] for r in pairs])
               if pairs else "")
            + (f"<h3>The easiest windows (of {result.window} tokens)</h3>"
               + table(list(records[0]), [[short(str(v)) for v in r.values()] for r in records])
               if records else ""))


AUDIT = AuditHooks(
    needs=("model", "corpus"),
    fields={"model": "model", "corpus": "corpus", "reference": "reference", "sigma": "sigma",
            "q": "q", "steps": "steps"},
    verdict=verdict, section=section,
    series={"b": "b: bits of the easiest window",
            "greedy_fraction": "greedy-extractable share of windows"},
    order=15)
