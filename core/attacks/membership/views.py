"""A membership-inference result for people: the attacks side by side, and a warning for a
score below chance (the page and the report)."""

from __future__ import annotations

from core.attacks.membership.config import MiaResult
from core.evaluation import membership as me

CHANCE_MARGIN = 0.05   # without an interval, an AUROC this far below 0.5 is below chance


def _with_ci(value: float | None, ci: list[float]) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def comparison(result: MiaResult) -> list[dict[str, str]]:
    """The attacks, best AUROC first, then the blind baseline: one row each with AUROC and the
    TPR at each of ``me.FPR_POINTS`` FPR, 95% intervals in brackets (the page and the report)."""
    ranked = [(a.title, a.citation, a.metrics)
              for a in sorted(result.attacks, key=lambda a: -a.metrics.auroc)]
    rows = []
    for title, source, m in ranked + [("Blind baseline (no model)", "Das, Zhang & Tramèr 2024",
                                        result.blind)]:
        row = {"attack": title, "source": source, "AUROC [95% CI]": _with_ci(m.auroc, m.auroc_ci)}
        for fpr, attr in me.TPR_FIELDS.items():
            label = f"TPR @ {fpr:.1%} FPR".replace(".0%", "%")
            row[label] = _with_ci(getattr(m, attr), getattr(m, f"{attr}_ci"))
        rows.append(row)
    return rows


def below_chance(metrics: me.Metrics) -> bool:
    """Whether an AUROC is below chance: its interval lies wholly below 0.5 (without one, it is
    below 0.5 by more than ``CHANCE_MARGIN``)."""
    if metrics.auroc_ci:
        return metrics.auroc_ci[1] < 0.5
    return metrics.auroc < 0.5 - CHANCE_MARGIN


def below_chance_warning(result: MiaResult) -> str | None:
    """What an attack whose AUROC is below chance means (None when none is): its score ranks
    non-members above members, so the figure is no evidence of privacy."""
    low = [a for a in result.attacks if below_chance(a.metrics)]
    if not low:
        return None
    named = ", ".join(f"{a.title} (AUROC {a.metrics.auroc:.3f}" + (
        f", 95% CI {a.metrics.auroc_ci[0]:.3f}–{a.metrics.auroc_ci[1]:.3f})"
        if a.metrics.auroc_ci else ")") for a in low)
    return (f"AUROC below chance: {named}. A score below chance ranks non-members above "
            "members: the member and non-member sets likely differ in distribution (not a fair "
            "split), or the score's sign is inverted. Such a figure is not evidence of privacy.")
