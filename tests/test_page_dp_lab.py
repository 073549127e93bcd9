"""The DP lab page: knobs, a background run with progress, the Figure 4 plot and table, bad input."""

import json

from pagetest import page_app, wait_for_run


def test_default_page_then_a_small_run_draws_figure_and_gap_table():
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception  # the fine-tuning tab offers to build the missing demo:
    assert [e.value for e in at.error if "not built yet" not in e.value] == []
    assert at.tabs[0].label == "Is the bound tight? (n-gram canary)"
    assert at.number_input(key="ng-models").value == 10_000
    assert at.number_input(key="ng-steps").value == 10
    at.text_input(key="ng-exact").set_value("1, 3")
    at.number_input(key="ng-models").set_value(1000)
    at.number_input(key="ng-steps").set_value(4)
    at.button(key="ng-run").click().run()
    assert not at.exception
    run = wait_for_run("ngram-canary", timeout=40)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception
    table = at.get_by_key("ng-points").dataframe[0].value
    assert list(table["sigma"]) == [1.0, 3.0]
    assert (table["empirical_nats"] < table["bound_L_nats"]).all()
    assert (table["gap_nats"] > 0).all()
    assert (table["bound_L_nats"] < table["min_h_nats"]).all()
    names = [trace["name"] for trace in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]]
    assert names[:2] == ["empirical log(p1/p0)", "L(p0) (Stock et al.)"]


def test_bad_sigma_list_shows_an_error_and_disables_the_run():
    at = page_app("app_pages/dp_lab.py").run()
    at.text_input(key="ng-exact").set_value("1, x").run()
    assert not at.exception
    assert "give numbers separated by commas" in at.error[0].value
    assert at.button(key="ng-run").disabled
    at.text_input(key="ng-exact").set_value("-2").run()
    assert "noise multipliers σ must be above 0" in at.error[0].value


def test_finetune_tab_runs_a_small_job_and_draws_secrecy_against_prior_and_bound(tiny_demo, lab_home):
    from demo_fixtures import install_demo

    install_demo(tiny_demo, lab_home)
    at = page_app("app_pages/dp_lab.py").run()
    assert at.tabs[1].label == "DP fine-tuning with a secret canary"
    at.text_input(key="ft-sigmas").set_value("0, -1").run()
    assert "noise multipliers σ must be from 0" in at.error[0].value
    assert at.button(key="ft-run").disabled
    at.text_input(key="ft-sigmas").set_value("0,2")
    for key, value in {"ft-steps": 2, "ft-canary_repeats": 2, "ft-batch_size": 8,
                       "ft-track_every": 1, "ft-max_records": 40,
                       "ft-validation_texts": 5}.items():
        at.number_input(key=key).set_value(value)
    at.run().button(key="ft-run").click().run()
    assert not at.exception
    run = wait_for_run("dp-finetune", timeout=40)
    assert run.status == "done", run.error
    at.run()
    assert not at.exception and not at.error
    table = at.get_by_key("ft-utility").dataframe[0].value
    assert list(table["sigma"]) == ["base model", "0", "2"]
    assert table["validation_perplexity"].notna().all()
    names = [trace["name"] for trace in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]]
    assert names == ["σ = 0", "σ = 2", "σ = 2: least secrecy the bound allows"]
