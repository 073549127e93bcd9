"""Every phase of an attack reports progress with a message, so that the bar never stands still
while its ETA counts down; speed figures say when they count scores read from the cache; a
running run reopened on the Runs page shows its progress and what it has so far."""

import re

import pytest

from core.jobs import Store, run_now
from core.registry import get_spec
from core.serialize import to_jsonable
from pagetest import page_app


def _messages(name, config=None):
    """(fraction, message) of every report of a recorded run of spec ``name`` (its tiny config),
    and its result."""
    spec = get_spec(name)
    reports = []
    result = run_now(spec, config or spec.tiny_config(),
                     progress=lambda f, m="", partial=None: reports.append((f, m)))
    return reports, result


def _phases(reports, *starts):
    """The first fraction reported by each phase (a message starting with it), in order."""
    return [next((f for f, m in reports if m.startswith(s)), None) for s in starts]


def test_every_phase_of_lazy_risk_reports_in_order():
    reports, _ = _messages("lazy-risk")
    phases = _phases(reports, "loading the models", "reading the sentences",
                     "train set, target model", "train set, calibration model",
                     "test set, target model", "generating sentences",
                     "generated set, target model", "done")
    assert None not in phases and phases == sorted(phases)
    generating = [f for f, m in reports if m.startswith("generating sentences")]
    assert len(set(generating)) > 1   # the bar moves while the sampler writes
    assert all(m for _, m in reports)


def test_user_inference_reports_within_its_scoring_and_its_analysis():
    reports, _ = _messages("user-inference")
    phases = _phases(reports, "loading the models", "target model: scored",
                     "reference model: scored", "bootstrap intervals",
                     "attacker-knowledge curve", "ranking the users")
    assert None not in phases and phases == sorted(phases)


def test_membership_inference_reports_each_attacks_evaluation():
    reports, result = _messages("mia")
    evaluating = [m for _, m in reports if m.startswith("evaluating ")]
    assert len(evaluating) == len(result.attacks)
    phases = _phases(reports, "token frequencies", "target: scored", "evaluating Loss",
                     "the blind baseline")
    assert None not in phases and phases == sorted(phases)


def test_diffrank_says_when_it_scores_the_phrase():
    reports, _ = _messages("diffrank")
    assert _phases(reports, "loading the models", "scoring the phrase")[1] is not None


@pytest.mark.parametrize("name, figure", [("user-inference", "Users per minute"),
                                          ("mia", "The scoring time"),
                                          ("lazy-risk", "The time taken")])
def test_speed_figures_say_when_they_count_cached_scores(name, figure):
    _messages(name)
    _, again = _messages(name)   # the same texts: every score from the cache
    cached = [n for n in again.notes if n.startswith(f"{figure}: ")]
    assert cached and re.match(rf"{figure}: (\d+) of the \1 texts scored came from the score "
                               "cache", cached[0]), again.notes


def _running(kind, partial):
    """A run of ``kind`` this process is running, which reported ``partial`` at 40%."""
    store = Store()
    run_id = store.create(kind, {})
    store.start(run_id)
    store.report(run_id, 0.4, "scoring", partial=partial)
    return run_id


def test_a_running_run_on_the_runs_page_shows_its_progress_and_what_it_has_so_far():
    _, result = _messages("lazy-risk")
    summarised = _running("user-inference", {"samples_scored": 256, "t_hat_so_far": {"a": 1.0}})
    drawn = _running("lazy-risk", to_jsonable(result))
    at = page_app("app_pages/runs.py").run()
    assert not at.exception and at.selectbox(key="run").value == drawn
    assert at.get("progress")[0].proto.text.startswith("40% · scoring")
    assert "So far" in at.markdown[0].value and len(at.json) == 1   # its parameters alone
    at.selectbox(key="run").set_value(summarised).run()
    assert not at.exception and len(at.json) == 1
    shown = [c.value.replace("\\", "") for c in at.caption]   # markdown escapes aside
    assert "samples_scored: 256 · t_hat_so_far: 1 entries" in shown
