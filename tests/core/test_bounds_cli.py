"""`python -m core bounds ... --json` and `bounds-sigma`: output and every kind of bad input."""

import json

import pytest

from core.__main__ import main

PAPER = ["--q", "2.81e-4", "--steps", "186000", "--bits", "40", "--delta", "3e-7"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_bounds_json_has_the_issues_fields(capsys):
    code, out, _ = run(capsys, ["bounds", "--sigma", "0.6", *PAPER, "--json"])
    data = json.loads(out)
    assert code == 0
    # the paper's setting, every order α > 1 searched (on the order grid: 8.7289, 10.807, 3.833)
    assert data["leakage_bits"] == pytest.approx(8.72858, abs=1e-4)
    assert data["traditional_bits"] == pytest.approx(10.79866, abs=1e-4)
    assert data["alpha_leakage"] == pytest.approx(5.191, abs=1e-3)
    assert data["epsilon"] == pytest.approx(3.83282, abs=1e-4)
    assert data["epsilon_standard"] > data["epsilon"]
    assert data["tight_leakage_bits"] is None


def test_bounds_tight(capsys):
    argv = ["bounds", "--sigma", "1", "--q", "0.01", "--steps", "1e3", "--bits", "8", "--delta", "1e-5",
            "--tight", "--json"]
    data = json.loads(run(capsys, argv)[1])
    assert 0 < data["tight_leakage_bits"] <= data["leakage_bits"]
    assert data["tight_precision_limited"] is False


def test_bounds_sigma(capsys):
    code, out, _ = run(capsys, ["bounds-sigma", "--q", "2.81e-4", "--steps", "186000", "--delta", "3e-7",
                                "--target-epsilon", "8", "--json"])
    assert code == 0 and 0.4 < json.loads(out)["sigma"] < 0.6


@pytest.mark.parametrize("bad", [["--sigma", "0"], ["--sigma", "-1"], ["--q", "0"], ["--q", "1.5"],
                                 ["--steps", "0"], ["--bits", "0"], ["--bits", "-3"], ["--delta", "0"],
                                 ["--delta", "1"], ["--sigma", "nan"], ["--q", "inf"],
                                 ["--sigma", "0.19"], ["--sigma", "0.001"], ["--sigma", "1e-300"]])
def test_bad_input_is_one_line_and_exit_2(capsys, bad):
    argv = ["bounds", "--sigma", "1", "--q", "0.01", "--steps", "100", "--bits", "8", "--delta", "1e-5"]
    code, out, err = run(capsys, argv + bad + ["--json"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: ")


@pytest.mark.parametrize("bad", [["--sigma", "abc"], ["--steps", "1.5"], ["--delta", "x"]])
def test_non_numbers_exit_2_via_argparse(capsys, bad):
    argv = ["bounds", "--sigma", "1", "--q", "0.01", "--steps", "100", "--bits", "8", "--delta", "1e-5"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv + bad)
    assert exit_info.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_sigma_below_the_labs_range_names_it_and_bounds_sigma_stays_in_it(capsys):
    argv = ["bounds", "--sigma", "0.05", "--q", "0.01", "--steps", "100", "--bits", "8",
            "--delta", "1e-5"]
    code, _, err = run(capsys, argv)
    assert code == 2 and "--sigma must be from 0.2 to 1,000, not 0.05" in err
    code, out, _ = run(capsys, ["bounds-sigma", "--q", "1e-6", "--steps", "1", "--delta", "0.1",
                                "--target-epsilon", "100", "--json"])
    assert code == 0 and json.loads(out)["sigma"] == 0.2   # met already at the lower limit


def test_a_tight_bound_too_wide_to_compute_is_the_full_leak_flagged(capsys):
    """A distribution too wide to hold (the losses under P and Q thousands of nats apart): the
    full leak, flagged precision-limited, at once."""
    argv = ["bounds", "--sigma", "0.2", "--q", "1e-3", "--steps", "1e6", "--bits", "8",
            "--delta", "1e-5", "--tight", "--json"]
    code, out, _ = run(capsys, argv)
    data = json.loads(out)
    assert code == 0 and data["tight_leakage_bits"] == 8 and data["tight_precision_limited"]
