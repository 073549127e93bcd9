"""The lab's one σ range (``core.bounds.training_run``): the Bound Explorer's slider and links
start at its lower limit, a form keeps Run disabled, saying the range, for a σ outside it, and a
run at the limit finishes (the CLI's refusals are in test_cli_fuzz.py and test_bounds_cli.py)."""

import json

from core.__main__ import main
from core.bounds.training_run import SIGMA_MAX, SIGMA_MIN
from pagetest import page_app

EXPLORER = "app_pages/bound_explorer.py"
RANGE_TEXT = "from 0.2 to 1,000"


def test_the_range_is_the_one_the_messages_state():
    assert (SIGMA_MIN, SIGMA_MAX) == (0.2, 1000.0)


def test_the_bound_explorers_sigma_starts_at_the_labs_lower_limit():
    at = page_app(EXPLORER)
    at.query_params.update({"sigma": "0.15"})
    at.run()
    assert not at.exception and at.slider(key="sigma").min == SIGMA_MIN
    assert any("sigma='0.15'" in e.value and "0.2, 10" in e.value for e in at.error)
    assert at.session_state["sigma"] == 0.6   # the link's σ is ignored: the default stays


def test_a_forms_run_stays_disabled_with_the_range_for_a_sigma_below_it(lab_home):
    lab_home.mkdir(parents=True, exist_ok=True)
    scores = lab_home / "scores.csv"
    scores.write_text("score,member\n" + "".join(f"{i % 5},{'true' if i % 2 else 'false'}\n"
                                                  for i in range(40)), encoding="utf-8")
    at = page_app("app_pages/dp_lab.py").run()
    at.text_input(key="audit-scores-path").set_value(str(scores)).run()
    at.number_input(key="audit-sigma").set_value(0.001).run()
    assert not at.exception and at.button(key="audit-run").disabled
    assert any(RANGE_TEXT in e.value for e in at.error)
    at.number_input(key="audit-sigma").set_value(0.0).run()   # 0: no DP run given
    assert not at.button(key="audit-run").disabled


def test_a_run_at_the_lower_limit_gets_its_caps_after_the_attack(capsys):
    """mia at σ = 0.2, q = 0.001, T = 10^6 (recorded, as by default): after the attack, the run's
    privacy loss distribution asked for 16 GB and more; its caps are 1 (a vacuous guarantee)."""
    argv = ["mia", "--tiny", "--sigma", "0.2", "--q", "1e-3", "--steps", "1e6", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["tpr_caps"] == {"0.001": 1.0, "0.01": 1.0,
                                                               "0.05": 1.0}
