"""The audit's bar is split by each attack's expected cost (its config's sizes at this machine's
pace on the model), not evenly: extraction with 10x the samples takes a larger part of it, so
the ETA extrapolated from the bar holds. No timing is asserted: only where the parts meet."""

import dataclasses

from core.audit import audit, costs
from core.cost.pace import Pace


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


PACE = Pace(scored=1000.0, step=0.01, row=0.001)


def _expected(tiny: audit.AuditConfig, *settings, asked: list | None = None) -> dict[str, float]:
    """The audit's parts at a fixed pace (``asked``: whether generation's pace was asked for)."""
    config = dataclasses.replace(tiny, settings=settings)
    configs = {name: audit.plan.attack_config(name, config) for name in config.chosen()}
    asked = [] if asked is None else asked
    return costs.expected_seconds(configs, "cpu", lambda generates: asked.append(generates)
                                  or PACE)


def test_expected_seconds_follow_the_config_sizes():
    tiny = dataclasses.replace(audit.tiny_config(), attacks=("extraction", "mia"))
    base = _expected(tiny, "extraction.n_samples=10")
    more = _expected(tiny, "extraction.n_samples=100")
    assert more["mia"] == base["mia"] and more["extraction"] > 5 * base["extraction"]
    shorter = _expected(tiny, "extraction.n_samples=10", "extraction.tokens=4")
    assert shorter["extraction"] < base["extraction"]
    assert _expected(tiny, "extraction.n_samples=10", "mia.recall_shots=0")["mia"] < base["mia"]


def test_a_beam_search_over_a_given_sample_is_priced_at_the_generation_pace(tmp_path):
    """Issue #42, B3: with a sample and no attack that samples text, differential rank's beam
    search got the bar's 1% floor (generation's pace was never measured): its decoding steps
    are generation work, so the pace is measured and its part follows the beam."""
    sample = tmp_path / "sample.txt"
    sample.write_text("a public text of the domain\n" * 20)
    tiny = dataclasses.replace(audit.tiny_config(), attacks=("diffrank", "mia"))
    asked = []
    narrow = _expected(tiny, f"diffrank.sample={sample}", "diffrank.beam=4", asked=asked)
    wide = _expected(tiny, f"diffrank.sample={sample}", "diffrank.beam=64")
    assert asked == [True]
    assert narrow["diffrank"] > 0.01 * sum(narrow.values())
    assert wide["diffrank"] > narrow["diffrank"]
