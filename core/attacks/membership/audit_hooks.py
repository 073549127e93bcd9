"""What the audit takes of membership inference (the MIA suite): its inputs, its verdict in plain words, its report
section (with a reference, the per-token heat map of the highest-scoring members) and the
measures an audit series draws against the training step."""

from __future__ import annotations

import html
import math

from core.attacks.membership.views import below_chance_warning, comparison
from core.reporting.html import rocs, short, table, token_heat_maps
from core.specs import AuditHooks

HEAT_TEXTS = 3   # the highest-scoring members whose per-token heat map the report shows


def verdict(result) -> str:
    best = result.best()
    bounds = best.metrics.auroc_ci   # empty without bootstrap
    ci = f" (95% CI {bounds[0]:.3f}–{bounds[1]:.3f})" if bounds else ""
    warning = " The blind baseline does as well: the split leaks." if result.warning else ""
    inverted = below_chance_warning(result)
    return (f"Best membership attack: {best.title}, AUROC {best.metrics.auroc:.3f}"
            f"{ci} on {result.n_members} members and "
            f"{result.n_non_members} non-members; blind baseline {result.blind.auroc:.3f}."
            f"{warning}" + (f" {inverted}" if inverted else ""))


def section(result) -> str:
    rows = comparison(result)
    return (table(list(rows[0]), [list(r.values()) for r in rows])
            + rocs([a.metrics for a in result.attacks] + [result.blind], "mia")
            + heat_maps(result))


def heat_maps(result) -> str:
    """Where in the text the signal is: the ``HEAT_TEXTS`` members the best attack scores
    highest, each token coloured by log p_target − log p_reference ("" without a reference)."""
    best = result.best()
    members = [r for r in result.rows if r.member and r.tokens]
    if not members:
        return ""

    def score(row) -> float:   # a text the attack gave no score comes last
        value = row.scores.get(best.name)
        return -math.inf if value is None or math.isnan(value) else value

    top = sorted(members, key=score, reverse=True)[:HEAT_TEXTS]
    return (f"<h3>Where in the text the signal is: the {len(top)} members "
            f"{html.escape(best.title)} scores highest</h3>"
            + token_heat_maps([(f"{best.title} score {score(r):.4g}: {short(r.text, 80)}",
                                r.tokens, r.token_diff) for r in top]))


AUDIT = AuditHooks(
    needs=("model", "members"),
    fields={"model": "model", "reference": "reference", "data": "members"},
    verdict=verdict, section=section,
    series={"best_auroc": "best membership AUROC"},
    order=40)
