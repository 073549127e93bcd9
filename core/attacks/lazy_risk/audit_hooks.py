"""What the audit takes of lazy risk: its inputs, its verdict in plain words, its report
section and the measures an audit series draws against the training step."""

from __future__ import annotations


from core.calibration.public import with_public
from core.reporting.html import table, short
from core.specs import AuditHooks


def verdict(result) -> str:
    train = [x for x in result.sentences if x.set == "train"]
    if not train:
        return "No training sentence was scored."
    top = train[0]
    chance = ("never generated" if top.log10_probability is None
              else f"generated with probability 10^{top.log10_probability:.1f}")
    return (f"Of {len(train):,} training sentences the most at risk is “{top.text[:120]}” "
            f"({chance} by the sampler; calibrated loss {top.calibrated_loss:.2f} nats).")


def section(result) -> str:
    train = [x for x in result.sentences if x.set == "train"][:10]
    rows = [(x.rank, short(x.text), x.log10_probability, x.calibrated_loss, x.copies)
            for x in train]
    tracked = [(t.text, t.rank, t.matches) for t in result.tracked]
    return (table(*with_public(("rank", "sentence", "log10 λ(x)", "calibrated loss", "copies"),
                               rows, [x.public for x in train]))
            + (table(("tracked", "rank", "matching sentences"), tracked) if tracked else ""))


AUDIT = AuditHooks(
    needs=("model", "reference", "corpus"),
    fields={"model": "model", "calibration": "reference", "train": "corpus"},
    verdict=verdict, section=section,
    series={"worst_tracked_rank": "worst rank of a tracked sentence",
            "train_mean_calibrated_loss": "mean calibrated loss of training sentences"},
    order=50)
