"""The audit's bar is split by each attack's expected cost (its config's sizes at this machine's
pace on the model), not evenly: extraction with 10x the samples takes a larger part of it, so
the ETA extrapolated from the bar holds. No timing is asserted: only where the parts meet."""

import dataclasses

from core.audit import audit, costs


def _extraction_part(config: audit.AuditConfig) -> float:
    """The fraction of the audit's bar at which its second attack (mia) starts."""
    reports = []
    audit.run(config, progress=lambda f, m="", partial=None: reports.append((f, m)))
    return next(f for f, m in reports if m.startswith("mia"))


def test_the_bar_gives_extraction_a_part_that_grows_with_its_samples():
    tiny = dataclasses.replace(audit.tiny_config(), attacks=("extraction", "mia"))
    settings = ("extraction.tokens=12", "extraction.batch_size=4", "mia.bootstrap=0")
    few = dataclasses.replace(tiny, settings=(*settings, "extraction.n_samples=4"))
    many = dataclasses.replace(tiny, settings=(*settings, "extraction.n_samples=40"))
    assert _extraction_part(few) < _extraction_part(many)


def test_expected_seconds_follow_the_config_sizes(monkeypatch):
    monkeypatch.setattr(costs.Sizes, "cpu", lambda self: 1e6)   # the tokeniser's pace, fixed
    tiny = dataclasses.replace(audit.tiny_config(), attacks=("extraction", "mia"))
    pace = costs.Pace(scored=1000.0, step=0.01, row=0.001, end=0.05)
    lm = audit.resolve_model(tiny.model, device="cpu")

    def seconds(*settings):
        config = dataclasses.replace(tiny, settings=settings)
        configs = {name: audit.plan.attack_config(name, config) for name in config.chosen()}
        return costs.expected_seconds(configs, pace, lm)

    base = seconds("extraction.n_samples=10")
    more = seconds("extraction.n_samples=100")
    assert more["mia"] == base["mia"] and more["extraction"] > 5 * base["extraction"]
    shorter = seconds("extraction.n_samples=10", "extraction.tokens=4")
    assert shorter["extraction"] < base["extraction"]
    assert seconds("extraction.n_samples=10", "mia.recall_shots=0")["mia"] < base["mia"]
