"""Pages of the privacy labs: they render, run a small setting, and turn bad knobs into errors."""

from pagetest import page_app


def test_model_extraction_page_extracts_a_small_network():
    at = page_app("app_pages/lab_model_extraction.py").run()
    assert not at.exception
    at.slider[0].set_value(8).run()    # hidden width
    at.slider[1].set_value(2).run()    # lines
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert at.metric[0].value == "8 / 8"
    assert float(at.metric[3].value) == 1.0
    assert len(at.get("plotly_chart")) == 3
    assert at.get("download_button")


def test_model_extraction_page_shows_the_rounding_defence_and_budget_warning():
    at = page_app("app_pages/lab_model_extraction.py").run()
    at.slider[0].set_value(8).run()
    at.number_input[0].set_value(1_000).run()   # query budget
    at.toggle[0].set_value(True).run()
    at.button[0].click().run()
    assert not at.exception
    assert "budget" in at.warning[0].value


def test_gradient_leakage_page_reconstructs_and_sweeps_batches():
    at = page_app("app_pages/lab_gradient_leakage.py").run()
    assert not at.exception
    at.slider[1].set_value(10).run()   # iterations
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert float(at.metric[0].value) < 1e-3
    assert at.metric[1].value == "100%"
    assert len(at.get("plotly_chart")) == 2
    at.slider[1].set_value(3).run()
    at.button[1].click().run()
    assert not at.exception
    assert list(at.dataframe[0].value.batch_size) == [1, 2, 4, 8]


def test_label_only_page_runs_and_rejects_zero_dp_noise():
    at = page_app("app_pages/lab_label_only.py").run()
    assert not at.exception
    at.slider[0].set_value(40).run()   # members
    at.slider[1].set_value(1).run()    # seeds
    at.slider[3].set_value(5).run()    # noisy queries
    at.slider[4].set_value(1).run()    # directions
    at.slider[5].set_value(10).run()   # epochs
    at.toggle[0].set_value(True).run()  # labels only
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert "labels only" in at.info[0].value
    assert len(at.dataframe[0].value) == 5
    assert len(at.get("plotly_chart")) == 2
    at.radio[0].set_value("DP-SGD (Opacus)").run()
    at.number_input[0].set_value(0.0).run()   # noise multiplier
    at.button[0].click().run()
    assert not at.exception
    assert "noise_multiplier" in at.error[0].value
