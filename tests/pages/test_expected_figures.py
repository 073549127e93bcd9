"""The measured demo figures beside a run (ui/expected.py): shown, from assets/demo_figures.json,
for a run with the demo's or the realistic scenario's values under the calibration it used;
nothing for another run, nor when the file lacks the section or the figure."""

import dataclasses
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import sources
from core.attacks.diffrank.config import DiffRankConfig
from core.attacks.diffrank.spec import DiffRankResult
from core.attacks.lazy_risk import spec as lr
from core.attacks.user_inference import spec as ui_attack
from core.calibration.config import DomainCalibration
from core.evaluation import membership as me
from ui import expected

DEMO_UI = sources.preset("user-inference", "demo")
REALISTIC_UI = sources.preset("user-inference", "realistic")
TRACK = sources.preset("lazy-risk", "realistic")["track"]
PUBLIC_SAMPLE = sources.preset("domain-reference", "realistic")["sample"]
CALIBRATED = DomainCalibration("domain-reference", PUBLIC_SAMPLE, "/cache/domain-ref", "trained")
# Not the real figures: every number shown must come from the file.
FIGURES = {
    "measured_on": "test box, 2000-01-01",
    "user-inference": {"real": {"auroc": 0.812, "ci": [0.701, 0.903], "tpr_1": 0.31,
                                "tpr_5": 0.52}, "canary_auroc": 1.0},
    "realistic-user-inference": {
        "none": {"real": {"auroc": 0.777, "ci": [0.612, 0.9], "users": 29}},
        "domain reference": {"real": {"auroc": 0.944, "ci": [0.851, 0.99], "users": 29}}},
    "realistic-lazy-risk": {
        "none": {"tracked": dict(zip(TRACK, [7, 8, 90, 6])), "train_sentences": 694},
        "domain reference": {"tracked": dict(zip(TRACK, [2, 3, 4, 1])), "train_sentences": 694}},
    "realistic-diffrank": {"none": {"plant_hits": [[7, "secret"]], "rows": 120},
                           "domain reference": {"plant_hits": [], "rows": 99}},
}


@pytest.fixture
def figures(tmp_path, monkeypatch) -> dict:
    """FIGURES as the figures file; edit the returned dict and call ``write`` to change it."""
    path = tmp_path / "demo_figures.json"
    monkeypatch.setattr(expected, "FIGURES", path)
    content = json.loads(json.dumps(FIGURES))
    path.write_text(json.dumps(content))
    return content


def write(content: dict) -> None:
    expected.FIGURES.write_text(json.dumps(content))


class Captions:
    """Stands in for a Streamlit container: records its captions."""

    def __init__(self):
        self.lines: list[str] = []

    def caption(self, text: str) -> None:
        self.lines.append(text)


def caption_of(found: expected.Expected | None, text) -> list[str]:
    where = Captions()
    expected.expected_caption(found, text, where=where)
    return where.lines


def test_a_demo_run_is_shown_the_demo_figures_from_the_file(figures):
    found = expected.figures_for("user-inference", DomainCalibration(), **DEMO_UI)
    assert found.preset == "demo" and found.figures == FIGURES["user-inference"]
    assert caption_of(found, expected.auroc("real")) == [
        "Expected on the demo (measured by `python -m figures.demo_figures`, test box, "
        "2000-01-01): AUROC 0.812 [0.701, 0.903], TPR 0.31 at 1% FPR and 0.52 at 5%"]
    assert caption_of(found, expected.auroc("all")) == []     # a group the file does not hold


def test_a_realistic_run_is_shown_the_figures_of_its_calibration(figures):
    plain_run = expected.figures_for("user-inference", DomainCalibration(), **REALISTIC_UI)
    assert plain_run.figures["real"]["auroc"] == 0.777
    calibrated = expected.figures_for(
        "user-inference", CALIBRATED, model=REALISTIC_UI["model"], data=REALISTIC_UI["data"],
        reference=expected.chosen("/cache/domain-ref", CALIBRATED))   # replaced: not compared
    assert "AUROC 0.944 [0.851, 0.990]" in caption_of(calibrated, expected.auroc("real"))[0]
    assert "the realistic scenario with the domain reference" in \
        caption_of(calibrated, expected.auroc("real"))[0]
    other_sample = dataclasses.replace(CALIBRATED, sample="my_public.txt")
    frequency = dataclasses.replace(CALIBRATED, method="token-frequency")
    for calibration in (other_sample, frequency):
        assert expected.figures_for("user-inference", calibration, model=REALISTIC_UI["model"],
                                    data=REALISTIC_UI["data"]) is None
    # the demo's figures were measured without calibration only
    assert expected.figures_for("user-inference", CALIBRATED, model=DEMO_UI["model"],
                                data=DEMO_UI["data"]) is None


def test_a_run_on_other_models_or_data_is_shown_nothing(figures):
    for changed in ({"model": "my-model"}, {"data": "users.csv"}, {"reference": "demo:updated"}):
        assert expected.figures_for("user-inference", DomainCalibration(),
                                    **DEMO_UI | changed) is None
    lazy = dict(model="realistic:updated", calibration="smollm2")
    assert expected.figures_for("lazy-risk", DomainCalibration(), **lazy,
                                track=TRACK[:2]) is None                # other sentences tracked
    stored = expected.figures_for("lazy-risk", DomainCalibration(), **lazy,
                                  track=list(TRACK))                    # read back: a list
    assert caption_of(stored, expected.tracked_ranks(list(TRACK)))[0].endswith(
        "tracked sentences at ranks #7, #8, #90, #6 of 694 (in the table's order)")


def test_diffrank_figures_need_the_settings_they_were_measured_with(figures):
    config = DiffRankConfig(**sources.preset("diffrank", "realistic"))
    run = dataclasses.asdict(config)
    found = expected.figures_for("diffrank", DomainCalibration(), **run)
    assert caption_of(found, expected.first_plant)[0].endswith(
        "the first planted text (secret) in row 7 of the 120 sequences found (rank 6)")
    assert expected.figures_for("diffrank", DomainCalibration(), **run | {"length": 6}) is None
    # the domain reference's steps count only when it was used
    assert expected.figures_for("diffrank", DomainCalibration(), **run | {"domain_steps": 7})
    calibrated = run | {"domain_sample": PUBLIC_SAMPLE}
    assert caption_of(expected.figures_for("diffrank", CALIBRATED, **calibrated),
                      expected.first_plant)[0].endswith("no planted text among the 99 "
                                                        "sequences found")
    assert expected.figures_for("diffrank", CALIBRATED, **calibrated | {"domain_steps": 7}) is None


def test_a_missing_section_figure_or_file_shows_nothing(figures):
    del figures["user-inference"], figures["realistic-lazy-risk"]["domain reference"]
    write(figures)
    assert expected.figures_for("user-inference", DomainCalibration(), **DEMO_UI) is None
    assert expected.figures_for("lazy-risk", CALIBRATED, model="realistic:updated",
                                track=TRACK) is None
    figures["realistic-user-inference"]["none"]["real"] = {"auroc": 0.5}   # no interval
    write(figures)
    found = expected.figures_for("user-inference", DomainCalibration(), **REALISTIC_UI)
    assert caption_of(found, expected.auroc("real")) == []
    for broken in ("{not json", "[1, 2]"):
        expected.FIGURES.write_text(broken)
        assert expected.figures_for("user-inference", DomainCalibration(), **REALISTIC_UI) is None
    expected.FIGURES.unlink()
    assert expected.figures_for("user-inference", DomainCalibration(), **REALISTIC_UI) is None


# ---------------------------------------------------------------- in the renderers


def _render(module: str, result) -> AppTest:
    def page(module, result):
        import importlib

        importlib.import_module(module).render(result, key="t-")

    at = AppTest.from_function(page, args=(module, result), default_timeout=30).run()
    assert not at.exception
    return at


def _expected_captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("Expected on")]


def _user_inference(**sources_used) -> ui_attack.UserInferenceResult:
    """A result on 12 seeded users (the first 4 canary users), without any model."""
    rng = np.random.default_rng(0)
    users = [(f"u{i}", i % 2 == 0, i < 4) for i in range(12)]
    t_hat = {u: float(rng.normal(1.0 if member else 0.0)) for u, member, _ in users}
    rows = [ui_attack.UserRow(rank, u, t_hat[u], 3, member, canary, -60.0, -61.0, None)
            for rank, (u, member, canary) in enumerate(users, 1)]
    metrics = [me.evaluate([m for _, m, c in users if c == canary],
                           [t_hat[u] for u, _, c in users if c == canary], group=group,
                           bootstrap=20) for group, canary in (("real", False), ("canary", True))]
    top = metrics[0]
    return ui_attack.UserInferenceResult(
        rows=rows, samples=[], metrics=metrics, knowledge=[], auroc=top.auroc,
        auroc_ci=top.auroc_ci, tpr_at_1pct_fpr=top.tpr_at_1pct_fpr,
        tpr_at_1pct_fpr_ci=top.tpr_at_1pct_fpr_ci, tpr_at_5pct_fpr=top.tpr_at_5pct_fpr,
        tpr_at_5pct_fpr_ci=top.tpr_at_5pct_fpr_ci, threshold=None, calibration_fpr=0.05,
        n_known_out=6, n_users=12, n_samples=36, window=64, windowed_samples=0, notes=[],
        device="cpu", seconds=1.0, users_per_minute=720.0, **sources_used)


def test_the_user_inference_page_shows_the_demo_figures_beside_the_real_users_auroc(figures):
    at = _render("ui.render.user_inference", _user_inference(**DEMO_UI))
    assert _expected_captions(at) == [
        "Expected on the demo (measured by `python -m figures.demo_figures`, test box, 2000-01-01): "
        "AUROC 0.812 [0.701, 0.903], TPR 0.31 at 1% FPR and 0.52 at 5%"]
    mine = _user_inference(model="mine", reference="demo:base", data=DEMO_UI["data"])
    assert _expected_captions(_render("ui.render.user_inference", mine)) == []


def _lazy_risk(model: str) -> lr.LazyRiskResult:
    sentence = lr.SentenceRisk("train", "Zealous penguins.", 1, 4, -3.0, -1.3, 20.0, 2.0, 3.0,
                               -1.0, -2.0, rank=1)
    tracked = [lr.TrackedRank(text, None, None, 0) for text in TRACK]
    return lr.LazyRiskResult(model=model, calibration="smollm2",
                             sampler=lr.LazyRiskConfig(model="m", calibration="c",
                                                       train="t.txt").sampler,
                             sentences=[sentence], counts={"train": 1},
                             never_generated={"train": 0}, mean_calibrated_loss={"train": -1.0},
                             seconds=1.0, tracked=tracked)


def test_the_lazy_risk_page_shows_the_tracked_ranks_measured_on_the_realistic_scenario(figures):
    at = _render("ui.render.lazy_risk", _lazy_risk("realistic:updated"))
    [caption] = _expected_captions(at)
    assert caption.startswith("Expected on the realistic scenario without domain calibration")
    assert caption.endswith("tracked sentences at ranks #7, #8, #90, #6 of 694 (in the table's "
                            "order)")
    assert _expected_captions(_render("ui.render.lazy_risk", _lazy_risk("demo:updated"))) == []


def _diffrank(config: DiffRankConfig) -> DiffRankResult:
    return DiffRankResult(config=config, before=config.before, after=config.after, metric="ds",
                          rows=[], phrase=None, widths=[], vocabulary=10, extensions_scored=0,
                          sample_texts=0, seconds=1.0, device="cpu")


def test_the_diffrank_page_shows_the_first_plants_row_measured_on_the_realistic_scenario(figures):
    config = DiffRankConfig(**sources.preset("diffrank", "realistic"))
    [caption] = _expected_captions(_render("ui.render.diffrank", _diffrank(config)))
    assert caption.endswith("the first planted text (secret) in row 7 of the 120 sequences "
                            "found (rank 6)")
    other = dataclasses.replace(config, beam=64)
    assert _expected_captions(_render("ui.render.diffrank", _diffrank(other))) == []


def test_an_extraction_run_on_the_demo_settings_is_shown_the_measured_precision(figures):
    demo = sources.preset("extraction", "demo")
    figures["extraction"] = {"samples_per_strategy": 1000, "precision": {
        "top-n": {"perplexity": 0.61, "zlib": 0.44}, "prefix": {"perplexity": 0.33}}}
    write(figures)
    run = dict(model=demo["model"], corpus=demo["corpus"], reference=demo["reference"],
               strategies=demo["strategies"], min_span_tokens=demo["min_span_tokens"],
               n_samples=1000)
    found = expected.figures_for("extraction", DomainCalibration(), **run)
    assert expected.extraction_precision(found.figures) == (
        "precision of the top-100, 1,000 samples per strategy: prefix 0.33–0.33, "
        "top-n 0.44–0.61")
    assert expected.figures_for("extraction", DomainCalibration(), **run | {"n_samples": 64}) is None


def test_the_caption_says_whether_the_users_build_is_the_measured_one(figures, monkeypatch):
    """Figures are tagged with the build they were measured on; another build (another
    machine's) is told so, with the figures measured on the other builds kept (the spread)."""
    figures["user-inference"]["build"] = "a1b2c3d4e5f6"
    figures["other_builds"] = {"user-inference": [
        {"build": "unrecorded", "real": {"auroc": 0.852, "ci": [0.75, 0.93]}}]}
    write(figures)
    found = expected.figures_for("user-inference", DomainCalibration(), **DEMO_UI)
    monkeypatch.setattr(expected, "build_fingerprint", lambda scenario: "a1b2c3d4e5f6")
    [same] = caption_of(found, expected.auroc("real"))
    assert "build `a1b2c3d4e5f6`" in same and same.endswith("(your build is that one).")
    monkeypatch.setattr(expected, "build_fingerprint", lambda scenario: "ffffffffffff")
    [other] = caption_of(found, expected.auroc("real"))
    assert "AUROC 0.812 [0.701, 0.903]" in other
    assert "Your build is `ffffffffffff`" in other
    assert other.endswith("On other builds: AUROC 0.852 [0.750, 0.930].")


def test_remeasuring_on_another_build_keeps_the_earlier_builds_figures():
    from figures.demo_figures import OTHER_BUILDS, keep_other_build

    figures = {"measured_on": "box A", "mia": {"auroc": 0.9}}
    keep_other_build(figures, "mia", "b1")   # measured before builds were recorded
    assert figures["other_builds"]["mia"] == [{"auroc": 0.9, "build": "unrecorded",
                                               "measured_on": "box A"}]
    figures["mia"] = {"auroc": 0.8, "build": "b1", "measured_on": "box B"}
    keep_other_build(figures, "mia", "b1")   # the same build: nothing kept
    assert len(figures["other_builds"]["mia"]) == 1
    for build in ("b2", "b3", "b4"):
        keep_other_build(figures, "mia", build)
        figures["mia"] = {"auroc": 0.7, "build": build, "measured_on": "box C"}
    assert len(figures["other_builds"]["mia"]) == OTHER_BUILDS
    assert figures["other_builds"]["mia"][0]["build"] == "b3"
