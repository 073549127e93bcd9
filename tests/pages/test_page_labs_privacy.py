"""Pages of the privacy labs: they render, run a small setting as a job, and turn bad knobs into
errors."""

from pagetest import page_app, wait_for_run


def _run(at, key: str, kind: str, count: int = 1):
    """Click ``key``'s Run button, wait for the job, and redraw the page with its result."""
    at.button(key=f"{key}-run").click().run()
    wait_for_run(kind, count=count)
    return at.run()


def test_model_extraction_page_extracts_a_small_network():
    at = page_app("app_pages/lab_model_extraction.py").run()
    assert not at.exception
    at.slider(key="mx-hidden").set_value(8)
    at.slider(key="mx-n_lines").set_value(2)
    _run(at.run(), "mx", "model-extraction")
    assert not at.exception and not at.error
    assert at.metric[0].value == "8 / 8"
    assert float(at.metric[3].value) == 1.0
    assert len(at.get("plotly_chart")) == 3
    assert at.get("download_button")


def test_model_extraction_page_shows_the_rounding_defence_and_budget_warning():
    at = page_app("app_pages/lab_model_extraction.py").run()
    at.slider(key="mx-hidden").set_value(8)
    at.number_input(key="mx-query_budget").set_value(1_000)
    at.toggle(key="mx-round_outputs").set_value(True)
    _run(at.run(), "mx", "model-extraction")
    assert not at.exception
    assert "budget" in at.warning[0].value


def test_gradient_leakage_page_reconstructs_and_sweeps_batches():
    at = page_app("app_pages/lab_gradient_leakage.py").run()
    assert not at.exception
    at.number_input(key="dlg-iterations").set_value(10)
    _run(at.run(), "dlg", "gradient-leakage")
    assert not at.exception and not at.error
    assert float(at.metric[0].value) < 1e-3
    assert at.metric[1].value == "100%"
    assert len(at.get("plotly_chart")) == 2
    at.number_input(key="dlg-iterations").set_value(3)
    _run(at.run(), "dlg-sweep", "gradient-leakage", count=2)
    assert not at.exception
    assert list(at.dataframe[0].value.batch_size) == [1, 2, 4, 8]


def test_label_only_page_runs_and_rejects_zero_dp_noise():
    at = page_app("app_pages/lab_label_only.py").run()
    assert not at.exception
    for name, value in (("n_members", 40), ("n_seeds", 1), ("noise_queries", 5),
                        ("directions", 1), ("epochs", 10)):
        at.slider(key=f"lo-{name}").set_value(value)
    at.toggle(key="lo-labels_only").set_value(True)
    _run(at.run(), "lo", "label-only-mi")
    assert not at.exception and not at.error
    assert "labels only" in at.info[0].value
    assert len(at.dataframe[0].value) == 5
    assert len(at.get("plotly_chart")) == 2
    at.radio(key="lo-defence").set_value("DP-SGD (Opacus)").run()
    at.number_input(key="lo-noise_multiplier").set_value(0.0).run()
    assert not at.exception
    assert "noise multiplier must be above 0 and at most 100, not 0" in at.error[0].value
    assert at.button(key="lo-run").disabled
