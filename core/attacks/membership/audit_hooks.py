"""What the audit takes of membership inference (the MIA suite): its inputs, its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations


from core.attacks.membership.views import comparison
from core.report_html import table, rocs
from core.specs import AuditHooks


def verdict(result) -> str:
    best = result.best()
    bounds = best.metrics.auroc_ci   # empty without bootstrap
    ci = f" (95% CI {bounds[0]:.3f}–{bounds[1]:.3f})" if bounds else ""
    warning = " The blind baseline does as well: the split leaks." if result.warning else ""
    return (f"Best membership attack: {best.title}, AUROC {best.metrics.auroc:.3f}"
            f"{ci} on {result.n_members} members and "
            f"{result.n_non_members} non-members; blind baseline {result.blind.auroc:.3f}."
            f"{warning}")


def section(result) -> str:
    rows = comparison(result)
    return (table(list(rows[0]), [list(r.values()) for r in rows])
            + rocs([a.metrics for a in result.attacks] + [result.blind], "mia"))


AUDIT = AuditHooks(
    needs=("model", "members"),
    fields={"model": "model", "reference": "reference", "data": "members"},
    verdict=verdict, section=section,
    series={"best_auroc": "best membership AUROC"},
    order=40)
