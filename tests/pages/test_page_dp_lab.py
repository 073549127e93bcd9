"""The DP lab page: knobs, a background n-gram run drawn as Figure 4 and its table, a recorded
fine-tuning run drawn as Figure 6 and its utility table, bad input."""

import base64
import json
import math

import numpy as np

from core.dp import finetune
from core.jobs import run_now
from core.runtime import no_progress
from pagetest import page_app, wait_for_run


def test_default_page_then_a_small_run_draws_figure_and_gap_table_in_bits():
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception  # the fine-tuning tab offers to build the missing demo:
    assert [e.value for e in at.error if "not built yet" not in e.value] == []
    assert at.tabs[0].label == "Is the bound tight? (n-gram canary)"
    assert at.number_input(key="ng-models").value == 10_000
    assert at.number_input(key="ng-steps").value == 3
    assert at.text_input(key="ng-sigmas").value == "0.5, 1, 2, 2.875, 4, 6, 8, 10"
    assert any("Keep the steps few" in c.value for c in at.caption)  # said before the run
    # 10 steps: min h at σ = 0.5 is ~90 bits, far above the full leak (33 bits), and at σ = 3
    # a handful of the 1,000 models carry p1.
    at.text_input(key="ng-sigmas").set_value("0.5, 3")
    at.number_input(key="ng-models").set_value(1000)
    at.number_input(key="ng-steps").set_value(10)
    at.button(key="ng-run").click().run()
    assert not at.exception
    run = wait_for_run("ngram-canary", timeout=40)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception
    table = at.get_by_key("ng-points").dataframe[0].value
    assert list(table["sigma"]) == [0.5, 3.0]
    assert (table["empirical_bits"] < table["bound_L_bits"]).all()
    assert (table["gap_bits"] > 0).all()
    assert (table["bound_L_bits"] < table["min_h_bits"]).all()
    assert table["bound_L_bits"].max() < 10 * math.log2(10) < table["min_h_bits"].max()
    assert "secret_bound_bits" not in table  # one record: the same as L(p0)
    [flagged] = [w.value for w in at.warning if "effective models" in w.value]
    assert flagged.startswith("At σ = 3 fewer than")
    labels = shown_labels(at.get_by_key("ng-points").dataframe[0])
    assert labels[:6] == ["σ", "measured bits", "interval", "L(p0) bits", "gap bits", "min h bits"]
    assert not any("nats" in label for label in labels)

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [trace["name"] for trace in spec["data"]]
    assert names[:2] == ["measured log2(p1/p0)", "L(p0) (Stock et al.)"]
    assert "bits" in spec["layout"]["yaxis"]["title"]["text"]
    low, high = spec["layout"]["yaxis"]["range"]
    drawn = np.concatenate([plotly_values(trace["y"]) for trace in spec["data"]])
    assert low <= min(table["interval_low"].min(), 0) and drawn.max() < high  # nothing clipped
    assert table["interval_high"].max() < high


def shown_labels(dataframe) -> list[str]:
    """The headers a dataframe shows, in order: each shown column has a short label."""
    config = json.loads(dataframe.proto.columns)
    return [config[name]["label"] for name in dataframe.proto.column_order]


def plotly_values(array) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's base64 typed array {"dtype", "bdata"}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array, dtype=float)


def test_bad_sigma_list_shows_an_error_and_disables_the_run():
    at = page_app("app_pages/dp_lab.py").run()
    at.text_input(key="ng-sigmas").set_value("1, x").run()
    assert not at.exception
    assert "give numbers separated by commas" in at.error[0].value
    assert at.button(key="ng-run").disabled
    at.text_input(key="ng-sigmas").set_value("-2").run()
    assert "noise multipliers σ must be from 0.2 to 1,000, not -2" in at.error[0].value


def test_finetune_tab_draws_a_recorded_run_and_checks_its_form(demo_home, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_CONFIRM_MINUTES", "1e9")   # Run needs no tick on a busy CPU
    run_now(finetune.SPEC, finetune.SPEC.tiny_config(), progress=no_progress)
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception and not at.error
    assert at.tabs[1].label == "DP fine-tuning with a secret canary"
    table = at.get_by_key("ft-utility").dataframe[0].value
    assert list(table["sigma"]) == ["base model", "0", "1"]
    assert table["validation_perplexity"].notna().all()
    assert shown_labels(at.get_by_key("ft-utility").dataframe[0])[2:6] == [
        "secrecy bits", "leaked bits", "allowed bits, 1 record", "allowed bits, all copies"]
    chart = next(c for c in at.get("plotly_chart") if c.key == "ft-figure-6")
    names = [trace["name"] for trace in json.loads(chart.proto.spec)["data"]]
    assert names == ["σ = 0", "σ = 1", "σ = 1: least secrecy the bound allows"]

    assert at.text_input(key="ft-sigmas").value == "0, 0.5, 1"  # the config's default
    at.text_input(key="ft-sigmas").set_value("0, -1").run()
    assert "noise multipliers σ must be 0 or from 0.2 to 1,000, not -1" in at.error[0].value
    assert at.button(key="ft-run").disabled
    at.text_input(key="ft-sigmas").set_value("0,2").run()
    assert not at.error and not at.button(key="ft-run").disabled
    precision = at.selectbox(key="ft-precision")
    assert precision.options == ["float32", "bf16-mixed"] and precision.value == "float32"


def _canaries_file(name: str, *, shift: float, seed: int):
    """400 scored canaries in the lab home, members ``shift`` standard deviations higher."""
    from core import paths
    from core.dp.audit_scores import write_canaries

    rng = np.random.default_rng(seed)
    members = rng.random(400) < 0.5
    return write_canaries(paths.home() / name, rng.normal(size=400) + shift * members, members)


def test_the_audit_tab_turns_a_scores_file_into_epsilon_lower_bounds():
    at = page_app("app_pages/dp_lab.py").run()
    assert at.button(key="audit-run").disabled and not at.error   # no file yet: a hint, no error
    path = _canaries_file("canaries.csv", shift=3.0, seed=0)
    at.text_input(key="audit-scores-path").set_value(str(path)).run()
    at.number_input(key="audit-sigma").set_value(1.0)
    at.number_input(key="audit-q").set_value(1.0)
    at.number_input(key="audit-steps").set_value(4)
    at.button(key="audit-run").click().run()
    run = wait_for_run("dp-audit", timeout=60)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    assert 0 < run.result["epsilon_lower"] < run.result["epsilon_upper"]
    assert any("ε ≥" in m.value or "ε" in m.label for m in at.metric)


def test_the_dp_labs_form_asks_an_explicit_method_for_its_threshold():
    path = _canaries_file("canaries-explicit.csv", shift=2.0, seed=1)
    at = page_app("app_pages/dp_lab.py").run()
    at.text_input(key="audit-scores-path").set_value(str(path)).run()
    assert not at.button(key="audit-run").disabled
    at.multiselect(key="audit-methods").select("one_run:explicit").run()
    assert at.button(key="audit-run").disabled
    assert any("needs the threshold" in e.value for e in at.error)
    at.text_input(key="audit-threshold").set_value("1.5").run()
    assert not at.error and not at.button(key="audit-run").disabled
