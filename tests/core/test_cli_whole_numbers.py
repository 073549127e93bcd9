"""A whole-number field takes whole numbers only (issue #45): 1.5, 1e308, nan and inf are
refused in one line that names the field and its range, by a command's option and by the
audit's ``--set``; 1e3 is read as 1000, and only when the number written is whole exactly."""

import pytest

import core.jobs
from core.__main__ import main
from core.commands import build_config, spec_parser
from core.registry import get_spec

NOT_WHOLE = ("1.5", "1e308", "nan", "inf", "-inf", "2.0000000000000001e3")


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("the command ran")

    monkeypatch.setattr(core.jobs, "run_now", ran)


def _refusal(capsys, argv: list[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("word", NOT_WHOLE)
def test_an_option_refuses_a_number_that_is_not_whole_naming_its_range(capsys, word):
    err = _refusal(capsys, ["ngram-canary", f"--steps={word}", "--no-record"])
    assert "steps" in err and "from 1 to 100,000" in err, err
    err = _refusal(capsys, ["ngram-canary", "--sigmas", "1", f"--seed={word}"])
    assert "seed" in err and "from 0 to 2,147,483,647" in err, err


@pytest.mark.parametrize("word", ("1.5", "1e308", "nan"))
def test_an_audit_setting_refuses_a_number_that_is_not_whole_naming_its_range(capsys, word):
    err = _refusal(capsys, ["audit", "--model=owner/name", "--set", f"extraction.n_samples={word}"])
    assert "extraction: samples per strategy" in err and "from 1 to 500,000" in err, err


def test_a_whole_number_in_exponent_notation_is_read_exactly():
    spec = get_spec("ngram-canary")
    parsed = spec_parser(spec, "ngram-canary").parse_args(["--models", "1e3", "--steps", "2.000e1"])
    config = build_config(spec, parsed)
    assert (config.models, config.steps) == (1000, 20)
    assert isinstance(config.models, int) and isinstance(config.steps, int)
