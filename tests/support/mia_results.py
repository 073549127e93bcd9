"""A membership-inference result made without any model, as the page and the audit draw it:
shared by the MIA page's tests and the audit's."""

import numpy as np

from core.attacks.membership import mia
from core.attacks.membership.blind import FEATURES
from core.attacks.membership.scores import ATTACKS
from core.evaluation import membership as me


def mia_result(blind_leaks: bool = False, inverted: bool = False) -> mia.MiaResult:
    """A seeded result on 40 texts (20 members, two groups); ``inverted``: every score ranks
    non-members above members (AUROC far below chance)."""
    rng = np.random.default_rng(0)
    labels = np.array([i % 2 for i in range(40)])
    scores = {name: labels * (-1.5 if inverted else k / 4) + rng.normal(size=40)
              for k, name in enumerate(ATTACKS)}
    outcomes = [mia.AttackOutcome(n, a.title, a.citation,
                                  me.evaluate(labels, scores[n], group=n, bootstrap=20))
                for n, a in ATTACKS.items()]
    blind_values = labels * (5.0 if blind_leaks else 0.0) + rng.normal(size=40)
    rows = [mia.TextRow(f"text {i}", bool(labels[i]), "ab"[i % 4 // 2], 12,
                        {n: float(scores[n][i]) for n in ATTACKS}) for i in range(40)]
    result = mia.MiaResult(
        model="demo:updated", reference="demo:base", data="demo:membership", attacks=outcomes,
        blind=me.evaluate(labels, blind_values, group="blind", bootstrap=20),
        blind_features=FEATURES, warning=None, rows=rows, n_members=20, n_non_members=20,
        recall_prefix="a prefix", group_auroc={"loss": {"a": 0.6, "b": 0.7}},
        notes=["a note"], sequences_scored={"target": 120, "reference": 40}, device="cpu",
        scoring_seconds=1.0, analysis_seconds=0.2)
    if blind_leaks:
        best = result.best()
        result.warning = f"The blind baseline ... as good as the best attack ({best.title})"
    return result
