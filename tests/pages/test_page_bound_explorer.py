"""The Bound Explorer page runs headless: default, presets, URL state, the δ control, Figure 1's
marks, the inverse solver's Apply button, tooltips and bad inputs."""

import json

from pagetest import page_app

PAGE = "app_pages/bound_explorer.py"
FIG1 = "Paper, real-life canary (Fig. 1)"
FIG2 = "Paper, Fig. 2 (σ = 0.4)"


def metrics(at):
    return {m.label: m.value for m in at.metric}


def chart_specs(at):
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_default_view_shows_the_papers_setting():
    at = page_app(PAGE).run()
    assert not at.exception and not at.error
    shown = metrics(at)
    assert shown["Leakage L (bits)"] == "8.73" and shown["ε at δ (Balle et al.)"] == "3.83"
    assert "leaks at most 8.7 of its 40 bits" in at.success[0].value
    assert at.query_params["q"] == "0.000281" and at.query_params["steps"] == "186000"
    assert len(at.get("download_button")) == 2
    assert at.selectbox(key="preset").value == FIG1  # the defaults are the paper's setting


def test_preset_and_slider_change_the_readout():
    at = page_app(PAGE).run()
    at.selectbox(key="preset").set_value(FIG2).run()
    assert not at.exception
    assert metrics(at)["Leakage L (bits)"] == "25.44" and at.query_params["sigma"] == "0.4"
    at.slider(key="bits").set_value(256).run()
    assert not at.exception and at.query_params["bits"] == "256"
    assert float(metrics(at)["Leakage L (bits)"]) > 25.44


def test_the_preset_box_resets_once_a_control_leaves_the_preset():
    at = page_app(PAGE).run()
    at.selectbox(key="preset").set_value(FIG2).run()
    at.select_slider(key="delta").set_value(1e-5).run()
    assert at.selectbox(key="preset").value == "—"
    at.select_slider(key="delta").set_value(3e-7).run()  # back on every value of the preset
    assert at.selectbox(key="preset").value == FIG2
    at.slider(key="sigma").set_value(0.5).run()
    assert not at.exception and at.selectbox(key="preset").value == "—"
    assert at.session_state["sigma"] == 0.5 and at.session_state["q"] == 2.81e-4  # values kept


def test_a_key_press_carrying_the_boxs_stale_preset_does_not_snap_back():
    """The browser can send the next σ step before it has shown the reset box: the move wins."""
    at = page_app(PAGE).run()
    at.slider(key="sigma").set_value(0.61).run()
    assert at.selectbox(key="preset").value == "—"
    at.selectbox(key="preset").set_value(FIG1)
    at.slider(key="sigma").set_value(0.62).run()
    assert at.session_state["sigma"] == 0.62 and at.selectbox(key="preset").value == "—"


def test_delta_is_a_log_scale_slider_in_scientific_notation():
    at = page_app(PAGE).run()
    delta = at.select_slider(key="delta")
    assert delta.options[0] == "1e-15" and delta.options[-1] == "5e-1"
    assert {"1e-10", "2e-10", "5e-10", "3e-7"} <= set(delta.options)  # a few per decade + the preset's
    assert delta.value == 3e-7
    delta.set_value(1e-5).run()
    assert at.query_params["delta"] == "1e-05"
    assert float(metrics(at)["ε at δ (Balle et al.)"]) < 3.83  # a larger δ buys a smaller ε


def test_the_url_round_trips_including_an_off_grid_delta():
    link = {"sigma": "1.5", "q": "0.01", "steps": "1000", "bits": "64", "delta": "4.4e-09"}
    at = page_app(PAGE)
    at.query_params.update(link)
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["delta"] == 4.4e-9 and "4.4e-9" in at.select_slider(key="delta").options
    assert dict(at.query_params) == link
    again = page_app(PAGE)
    again.query_params.update(dict(at.query_params))
    again.run()
    assert metrics(again) == metrics(at) and at.selectbox(key="preset").value == "—"


def test_state_comes_from_the_url_and_bad_values_are_reported():
    at = page_app(PAGE)
    at.query_params.update({"sigma": "1.5", "q": "0.01", "steps": "abc", "delta": "7"})
    at.run()
    assert not at.exception
    assert at.session_state["sigma"] == 1.5 and at.session_state["q"] == 0.01
    errors = " ".join(e.value for e in at.error)
    assert "steps='abc'" in errors and "delta='7'" in errors
    assert at.session_state["steps"] == 186_000


def test_figure1_marks_the_users_sigma_and_b_in_every_panel():
    at = page_app(PAGE).run()
    at.slider(key="bits").set_value(50).run()
    *panels, figure2 = chart_specs(at)
    titles = [panel["layout"]["title"]["text"] for panel in panels]
    assert len(panels) == 3 and "your σ = 0.6, ε = 3.83" in titles[1]  # σ ∈ {0.4, 0.6, 1.0}
    assert not any("your" in title for title in titles[::2])
    for panel in panels:
        assert [(s["x0"], s["x1"]) for s in panel["layout"]["shapes"]] == [(50, 50)]
        assert panel["layout"]["annotations"][0]["text"] == "b = 50"
    assert figure2["layout"]["title"]["text"] == "b = 50 bits, σ = 0.6"


def test_every_readout_metric_explains_itself():
    at = page_app(PAGE).run()
    helps = {m.label: m.help for m in at.metric}
    assert "Balle et al. (2020)" in helps["ε at δ (Balle et al.)"]
    assert "Eq. 3" in helps["Leakage L (bits)"] and "Mironov" in helps["Traditional min h (bits)"]
    assert "Rényi order α" in helps["Optimal order α"] and "p1" in helps["Posterior p1 ≤"]


def test_inverse_form_solves_and_rejects_an_impossible_target():
    at = page_app(PAGE).run()
    at.number_input(key="inverse_target").set_value(10.0)
    at.button(key="inverse_solve").click().run()
    assert not at.exception and "σ = 0.5688" in at.success[-1].value
    at.number_input(key="inverse_target").set_value(50.0)
    at.button(key="inverse_solve").click().run()
    assert not at.exception and "between 0 and the secret's length" in at.error[0].value


def test_apply_sets_the_sigma_slider_to_the_solution_rounded_up():
    at = page_app(PAGE).run()
    at.number_input(key="inverse_target").set_value(10.0)
    at.button(key="inverse_solve").click().run()
    apply = at.button(key="inverse_apply")
    assert apply.label == "Apply σ = 0.57"
    apply.click().run()
    assert not at.exception and at.slider(key="sigma").value == 0.57
    assert float(metrics(at)["Leakage L (bits)"]) <= 10 and at.query_params["sigma"] == "0.57"
    assert at.selectbox(key="preset").value == "—"


def test_a_solution_beyond_the_slider_says_so_instead_of_offering_apply():
    at = page_app(PAGE)
    at.query_params.update({"q": "1", "steps": "100", "bits": "40"})
    at.run()
    at.number_input(key="inverse_target").set_value(5.0)
    at.button(key="inverse_solve").click().run()
    assert not at.exception and "σ = 20.79" in at.success[-1].value
    assert "above the σ slider's range (0.2 to 10)" in at.warning[-1].value
    assert not [b for b in at.button if b.key == "inverse_apply"]


def test_the_tight_bound_is_drawn_for_the_users_sigma_alone():
    """One privacy profile a rerun on the script thread (issue #44): the compared σ's panels
    draw no tight line; the risk readouts read the same profile."""
    at = page_app(PAGE).run()
    at.toggle(key="tight").set_value(True).run()
    assert not at.exception and not at.error
    *panels, _ = chart_specs(at)
    drawn = ["tight bound (PLD)" in [trace["name"] for trace in panel["data"]] for panel in panels]
    assert drawn == [False, True, False]   # σ ∈ {0.4, 0.6 (yours), 1.0}
    shown = metrics(at)
    assert 0 < float(shown["Attack advantage ≤"]) < 1
    assert 0 < float(shown["Reconstruction of a 40-bit secret ≤"]) < 1
