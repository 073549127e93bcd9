"""What the audit takes of user inference: its inputs, its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations


from core.reporting.html import table, ci, rocs
from core.specs import AuditHooks


def verdict(result) -> str:
    if result.auroc is None:
        return f"{result.n_users} users ranked by T̂; no member labels, so no AUROC."
    ci = f" (95% CI {result.auroc_ci[0]:.3f}–{result.auroc_ci[1]:.3f})" if result.auroc_ci else ""
    return (f"User inference tells held-in from held-out users with AUROC {result.auroc:.3f}"
            f"{ci} over {result.n_users} users; TPR {result.tpr_at_1pct_fpr:.2f} at 1% FPR.")


def section(result) -> str:
    rows = [(m.group, m.n_in, m.n_out, f"{m.auroc:.3f}", ci(m.auroc_ci),
             f"{m.tpr_at_1pct_fpr:.3f}", f"{m.tpr_at_5pct_fpr:.3f}") for m in result.metrics]
    top = [(r.rank, r.user_id, r.t_hat, r.member) for r in result.rows[:15]]
    return (table(("users", "held-in", "held-out", "AUROC", "95% CI", "TPR @ 1% FPR",
                   "TPR @ 5% FPR"), rows)
            + (rocs(result.metrics, "user-inference") if result.metrics else "")
            + "<h3>Users ranked by T̂</h3>" + table(("rank", "user", "T̂", "member"), top))


AUDIT = AuditHooks(
    needs=("model", "reference", "users"),
    fields={"model": "model", "reference": "reference", "data": "users"},
    verdict=verdict, section=section,
    series={"auroc": "user inference AUROC",
            "tpr_at_1pct_fpr": "user inference TPR at 1% FPR"},
    order=30)
