"""The lab's one σ range (``core.bounds.training_run``): the Bound Explorer's slider and links
start at its lower limit, a form keeps Run disabled, saying the range, for a σ outside it, a
run at the limit finishes, and every σ option of the DP lab (dp-canary-audit, dp-finetune,
ngram-canary, dp-audit --ngram) refuses a σ outside it (the other commands' refusals are in
test_cli_fuzz.py and test_bounds_cli.py)."""

import json

import pytest

import core.jobs
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


# ---------------------------------------------------------------- the DP lab's σ options

class Reached(Exception):
    """A command got past its checks to its run."""


def _reached(*args, **kwargs):
    raise Reached()


# Each DP lab command's σ option, with the rest of a valid command; "{}" is the σ tried (in a
# list, after a valid σ: every σ of a list is checked). The σ = 0 column: accepted ("no DP",
# plain training) or refused (the run needs a σ).
DP_SIGMA_COMMANDS = [
    ("dp-canary-audit --model owner/name --corpus texts.txt --sigma {}", True),
    ("dp-finetune --model owner/name --corpus texts.txt --sigmas 0.5,{}", True),
    ("ngram-canary --sigmas 0.5,{}", False),
    ("dp-audit --ngram --q 1 --sigma {}", False),
]


def _main(argv: list[str], capsys) -> tuple[object, str]:
    """``(exit code, or "reached" at the run; stderr)`` of ``main(argv)``."""
    try:
        code = main(argv)
    except Reached:
        code = "reached"
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command, zero_accepted", DP_SIGMA_COMMANDS,
                         ids=[c.split()[0] for c, _ in DP_SIGMA_COMMANDS])
def test_every_dp_lab_sigma_is_refused_outside_the_range_in_one_line(command, zero_accepted,
                                                                     capsys, monkeypatch, tmp_path):
    """dp-canary-audit and dp-finetune took σ = 0.001 and ngram-canary σ = 0.01 (the PLD and
    RDP grids below 0.2: GBs and minutes); every σ option of the DP lab now refuses σ outside
    the lab's one range before any work (recorded by default: the run is a tripwire)."""
    monkeypatch.setattr(core.jobs, "run_now", _reached)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "texts.txt").write_text("a training text\n")
    for value in ("0.001", "0.01", "0.19", "1001"):
        code, err = _main(command.format(value).split(), capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, (value, code, err)
        assert RANGE_TEXT in err and "Traceback" not in err, err
    assert _main(command.format("0.2").split(), capsys)[0] == "reached"
    code, err = _main(command.format("0").split(), capsys)
    assert (code == "reached") == zero_accepted, (code, err)
    assert zero_accepted or RANGE_TEXT in err


def test_the_ngram_forms_run_stays_disabled_with_the_range():
    at = page_app("app_pages/dp_lab.py").run()
    at.text_input(key="ng-sigmas").set_value("0.5, 0.1").run()
    assert not at.exception and at.button(key="ng-run").disabled
    assert any(RANGE_TEXT in e.value for e in at.error)


def test_the_canary_audits_run_stays_disabled_with_the_range(demo_home):
    at = page_app("app_pages/dp_lab.py").run()
    at.number_input(key="ca-sigma").set_value(0.1).run()
    assert not at.exception and at.button(key="ca-run").disabled
    assert any(RANGE_TEXT in e.value for e in at.error)
    at.number_input(key="ca-sigma").set_value(0.0).run()   # 0: ordinary training, audited too
    assert not at.button(key="ca-run").disabled
