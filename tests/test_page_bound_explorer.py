"""The Bound Explorer page runs headless: default, a preset, URL state and bad inputs."""

from pagetest import page_app

PAGE = "app_pages/bound_explorer.py"


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_default_view_shows_the_papers_setting():
    at = page_app(PAGE).run()
    assert not at.exception and not at.error
    shown = metrics(at)
    assert shown["Leakage L (bits)"] == "8.73" and shown["ε at δ (Balle et al.)"] == "3.83"
    assert "leaks at most 8.7 of its 40 bits" in at.success[0].value
    assert at.query_params["q"] == "0.000281" and at.query_params["steps"] == "186000"
    assert len(at.get("download_button")) == 2


def test_preset_and_slider_change_the_readout():
    at = page_app(PAGE).run()
    at.selectbox(key="preset").set_value("Paper, Fig. 2 (σ = 0.4)").run()
    assert not at.exception
    assert metrics(at)["Leakage L (bits)"] == "25.48" and at.query_params["sigma"] == "0.4"
    at.slider(key="bits").set_value(256).run()
    assert not at.exception and at.query_params["bits"] == "256"
    assert float(metrics(at)["Leakage L (bits)"]) > 25.48


def test_state_comes_from_the_url_and_bad_values_are_reported():
    at = page_app(PAGE)
    at.query_params.update({"sigma": "1.5", "q": "0.01", "steps": "abc", "delta": "7"})
    at.run()
    assert not at.exception
    assert at.session_state["sigma"] == 1.5 and at.session_state["q"] == 0.01
    errors = " ".join(e.value for e in at.error)
    assert "steps='abc'" in errors and "delta='7'" in errors
    assert at.session_state["steps"] == 186_000


def test_inverse_form_solves_and_rejects_an_impossible_target():
    at = page_app(PAGE).run()
    at.number_input(key="inverse_target").set_value(10.0)
    at.button(key="inverse_solve").click().run()
    assert not at.exception and "σ = 0.5688" in at.success[-1].value
    at.number_input(key="inverse_target").set_value(50.0)
    at.button(key="inverse_solve").click().run()
    assert not at.exception and "between 0 and the secret's length" in at.error[0].value
