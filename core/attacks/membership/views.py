"""A membership-inference result for people: the attacks side by side (the page and the report)."""

from __future__ import annotations

from core.attacks.membership.config import MiaResult
from core.evaluation import membership as me


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
