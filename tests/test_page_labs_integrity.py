"""Pages of the integrity labs: they render, run a small setting, and turn bad knobs into errors."""

from pagetest import page_app


def test_trojan_page_runs_badnets_and_shows_results():
    at = page_app("app_pages/lab_trojan.py").run()
    assert not at.exception
    assert "has the trained model" in at.info[0].value
    at.radio[0].set_value("badnets").run()
    assert "training data" in at.info[0].value
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert float(at.metric[0].value) >= 0.9
    assert len(at.get("plotly_chart")) == 2


def test_trojan_page_rejects_zero_trojan_weight():
    at = page_app("app_pages/lab_trojan.py").run()
    at.number_input[-1].set_value(0.0).run()
    at.button[0].click().run()
    assert not at.exception
    assert "trojan_weight" in at.error[0].value


def test_contrastive_page_runs_a_small_curve_and_rejects_bad_counts():
    at = page_app("app_pages/lab_contrastive_poisoning.py").run()
    assert not at.exception
    at.text_input[0].set_value("0,30").run()
    at.number_input[1].set_value(1).run()   # seeds
    at.number_input[2].set_value(5).run()   # epochs
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 2
    at.text_input[0].set_value("zero, five").run()
    at.button[0].click().run()
    assert "whole numbers" in at.error[0].value
