"""What the audit takes of the natural-identifier audit (``core.dp.nid_audit``): the model, the
training corpus (the identifiers it holds), the reference when there is one, and the training
run's σ, q and steps (the accountant's ε beside); its verdict in plain words, its report section
and the measure an audit series draws against the training step. A corpus with no identifier of
the formats makes the audit's entry "Not run", with the reason."""

from __future__ import annotations

import html

from core.reporting.html import table
from core.specs import AuditHooks


def verdict(result) -> str:
    accountant = ("" if result.epsilon_upper is None else
                  f"; the accountant's ε of the training run is {result.epsilon_upper:.2f}")
    fdp = result.audit.epsilon_lower_fdp_one_run
    gaussian = "" if fdp is None else f" (Gaussian-DP ε ≥ {fdp:.2f})"
    proven = (f"proves ε ≥ {result.epsilon_lower:.2f}{gaussian}" if result.epsilon_lower > 0
              else "proves no ε above 0")
    return (f"Post hoc, from the {result.members:,} natural identifiers of the corpus against "
            f"as many fresh strings of their formats, the one-run audit {proven} at "
            f"{result.audit.epsilon_lower_confidence:.0%} confidence (δ = {result.config.delta:g})"
            f"{accountant}; AUROC {result.auroc:.3f}, TPR {result.tpr_at_1pct_fpr:.2f} at 1% "
            "FPR.")


def section(result) -> str:
    """The identifiers found by format, the bounds beside the accountant's ε, the notes."""
    from core.dp.audit_methods import bound_name, threshold_name

    found = ", ".join(f"{count:,} {name}" for name, count in result.found.items() if count)
    bounds = [(bound_name(b.method), threshold_name(b.method), f"{b.epsilon_lower:.3f}",
               f"{b.confidence:.1%}", b.true_positives, b.false_positives) for b in result.audit.bounds]
    head = table(("texts", "identifiers found", "audited (and as many fresh)", "ε ≥",
                  "accountant ε", "AUROC", "TPR @ 1% FPR"),
                 [(f"{result.texts:,}", found, f"{result.members:,}",
                   f"{result.epsilon_lower:.3f}",
                   "—" if result.epsilon_upper is None else f"{result.epsilon_upper:.3f}",
                   f"{result.auroc:.3f}", f"{result.tpr_at_1pct_fpr:.3f}")])
    notes = "".join(f"<p class='muted'>{html.escape(note)}</p>" for note in result.notes)
    return (head + table(("bound", "threshold", "ε ≥", "confidence", "members guessed right",
                          "fresh strings guessed members"), bounds) + notes)


AUDIT = AuditHooks(
    needs=("model", "corpus"),
    fields={"model": "model", "corpus": "corpus", "reference": "reference", "sigma": "sigma",
            "q": "q", "steps": "steps"},
    verdict=verdict, section=section,
    series={"epsilon_lower": "ε proven from the corpus' natural identifiers"},
    order=60)
