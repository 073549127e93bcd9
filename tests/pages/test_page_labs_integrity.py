"""Pages of the integrity labs: they render, run a small setting as a job, and turn bad knobs
into errors."""

from pagetest import page_app, wait_for_run


def test_trojan_page_runs_badnets_and_shows_results():
    at = page_app("app_pages/lab_trojan.py").run()
    assert not at.exception
    assert "has the trained model" in at.info[0].value
    at.radio(key="tj-variant").set_value("badnets").run()
    assert "training data" in at.info[0].value
    at.button(key="tj-run").click().run()
    wait_for_run("trojan")
    at.run()
    assert not at.exception and not at.error
    assert float(at.metric[0].value) >= 0.9
    assert len(at.get("plotly_chart")) == 2


def test_trojan_page_rejects_zero_trojan_weight():
    at = page_app("app_pages/lab_trojan.py").run()
    at.number_input(key="tj-trojan_weight").set_value(0.0).run()
    assert not at.exception
    assert "weight of trojaned data must be above 0 and at most 100, not 0" in at.error[0].value
    assert at.button(key="tj-run").disabled


def test_contrastive_page_runs_a_small_curve_and_rejects_bad_counts():
    at = page_app("app_pages/lab_contrastive_poisoning.py").run()
    assert not at.exception
    at.text_input(key="cp-poison_counts").set_value("0,30")
    at.number_input(key="cp-seeds").set_value(1)
    at.number_input(key="cp-epochs").set_value(5)
    at.run()
    at.button(key="cp-run").click().run()
    wait_for_run("contrastive-poisoning")
    at.run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 2
    at.text_input(key="cp-poison_counts").set_value("zero, five").run()
    assert "give numbers separated by commas" in at.error[0].value
    assert at.button(key="cp-run").disabled
