"""The CLI generated from config dataclasses: options, help, ranges, aliases and recording."""

import json
import subprocess
import sys

import pytest

import toy_spec
from core import registry
from core.__main__ import main
from core.commands import PLAIN, build_config, overview, run_spec_command, spec_parser
from core.errors import UserError
from core.jobs import Store, load_result
from pagetest import ROOT


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch):
    toy_spec.register(monkeypatch)


def _config(*argv):
    return build_config(toy_spec.SPEC, spec_parser(toy_spec.SPEC, "toy").parse_args(list(argv)))


def test_options_are_typed_from_the_config_fields():
    config = _config("--count", "5", "--scale", "0.5", "--mode", "slow", "--modes", "a,b",
                     "--sizes", "1,2", "--sizes", "4", "--wait", "--model", "m", "--temperature", "0.7")
    assert config == toy_spec.ToyConfig(n=5, scale=0.5, mode="slow", modes=("a", "b"),
                                        sizes=(1, 2, 4), wait=True, model="m", temperature=0.7)
    assert _config("--n", "3e1", "--no-wait", "--temperature", "none") == toy_spec.ToyConfig(n=30)
    assert _config() == toy_spec.ToyConfig()  # the dataclass defaults
    assert _config("--tiny") == toy_spec.SPEC.tiny_config()


def test_help_states_each_default_and_range():
    text = spec_parser(toy_spec.SPEC, "toy").format_help()
    assert "--count" in text and "--n N" in text
    assert "rows to make (default: 2; from 1 to 100)" in " ".join(text.split())
    assert "(default: 1.0; above 0)" in " ".join(text.split())


@pytest.mark.parametrize("argv, message", [
    (["--n", "0"], "n must be from 1 to 100, not 0"),
    (["--scale", "0"], "scale must be above 0, not 0"),
    (["--sizes", "2,65"], "sizes must be from 1 to 64, not 65"),
    (["--modes", "a,c"], "modes: choose one of a, b, not 'c'"),
])
def test_out_of_range_values_are_refused_with_the_range(argv, message):
    with pytest.raises(UserError, match=message):
        _config(*argv)


def test_badly_typed_words_exit_with_usage(capsys):
    with pytest.raises(SystemExit) as stop:
        _config("--n", "2.5")
    assert stop.value.code == 2 and "expected a whole number" in capsys.readouterr().err


def test_a_spec_run_from_the_cli_is_recorded_and_reads_back_typed(capsys):
    result = run_spec_command(toy_spec.SPEC, ["--n", "3"], "toy")
    assert result.total == 6.0
    [run] = Store().runs("toy")
    assert (run.status, run.params["n"], run.title) == ("done", 3, "toy with 3 rows")
    assert load_result(run) == result
    assert "[ 50%] half done" in capsys.readouterr().err  # the one CLI progress printer
    run_spec_command(toy_spec.SPEC, ["--n", "2", "--no-record"], "toy")
    assert len(Store().runs("toy")) == 1


def test_main_prints_the_result_as_json_and_errors_on_one_line(capsys):
    assert main(["toy", "--n", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 3.0
    assert main(["lab", "toy", "--n", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: n must be from 1 to 100, not 0"
    assert main(["nonsense"]) == 2


def test_aliases_and_plain_commands_do_not_collide():
    names = set(registry.ENTRIES) | set(registry.ALIASES) | set(PLAIN) | {"lab"}
    assert len(names) == len(registry.ENTRIES) + len(registry.ALIASES) + len(PLAIN) + 1
    assert registry.spec_name("extract") == "extraction"


def test_top_level_help_lists_every_command_without_importing_torch():
    code = ("import sys; from core.__main__ import main; main(['--help']); "
            "assert 'torch' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name, entry in registry.ENTRIES.items():
        if name == "toy":  # registered in this process only
            continue
        assert name in done.stdout and all(alias in done.stdout for alias in entry.aliases)
    assert overview().count("\n") > len(registry.ENTRIES)


def test_unknown_preset_is_refused():
    with pytest.raises(UserError, match="toy has no preset 'nope'"):
        _config("--preset", "nope")
