"""The CLI generated from config dataclasses: options, help, ranges, paths, aliases, recording."""

import dataclasses
import json
import os
import re
import subprocess
import sys
import types
import typing
from dataclasses import dataclass

import pytest

import toy_spec
from cli_commands import all_parsers, spec_commands
from core import registry
from core.__main__ import main
from core.cli_input import has_default
from core.commands import PLAIN, build_config, check_path, overview, run_spec_command, spec_parser
from core.errors import UserError
from core.jobs import Store, load_result
from core.specs import check_params, param
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
        _config("--n", "two")
    assert stop.value.code == 2 and "expected a whole number" in capsys.readouterr().err
    with pytest.raises(UserError, match="n: expected a whole number from 1 to 100, got 2.5"):
        _config("--n", "2.5")   # a number: the config refuses it with the range


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


# ------------------------------------------------------------------ ranges, paths, help (#18, #19)


def _number_kind(kind):
    """int or float for a number field (also inside ``X | None`` and tuples), else None."""
    inner = typing.get_args(kind)[0] if typing.get_origin(kind) in (tuple, typing.Union,
                                                                   types.UnionType) else kind
    return inner if inner in (int, float) else None


def test_every_number_field_of_every_spec_declares_both_ends_of_its_range():
    unbounded = []
    for name, spec in registry.all_specs().items():
        if name == "toy":  # registered for these tests only; it shows the safety net
            continue
        hints = typing.get_type_hints(spec.config_type)
        for field in dataclasses.fields(spec.config_type):
            meta = field.metadata
            if _number_kind(hints[field.name]) and (
                    meta.get("ge") is None and meta.get("gt") is None
                    or meta.get("le") is None and meta.get("lt") is None):
                unbounded.append(f"{name}.{field.name}")
    assert not unbounded, f"give these fields a range (ge/gt and le/lt): {unbounded}"


@dataclass(frozen=True)
class _Unbounded:
    count: int = param(0, help="a count")
    rate: float | None = param(None, help="a rate")

    def __post_init__(self):
        check_params(self)


@pytest.mark.parametrize("values, message", [
    ({"count": 2**63}, "count must be from -9,223,372,036,854,775,808 to "
                       "9,223,372,036,854,775,807, not 9,223,372,036,854,775,808"),
    ({"rate": float("nan")}, "rate: expected a finite number, got nan"),
    ({"rate": 1e400}, "rate: expected a finite number, got inf"),
])
def test_fields_without_a_range_still_take_only_finite_int64_numbers(values, message):
    with pytest.raises(UserError, match=re.escape(message)):
        _Unbounded(**values)
    assert _Unbounded(count=2**63 - 1, rate=1e300).rate == 1e300


def _help_of(parser, action) -> str:
    formatter = parser._get_formatter()
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_every_commands_help_lists_json_and_each_default(capsys):
    field_names = {f.name for _, spec in spec_commands()
                   for f in dataclasses.fields(spec.config_type)}
    checked = 0
    for words, parser in all_parsers():
        with pytest.raises(SystemExit):
            main([*words, "--help"])
        assert "--json" in capsys.readouterr().out, words
        spec_command = words[0] in registry.ENTRIES or words == ["demo", "build"]
        for action in parser._actions:  # a spec's options: one per field, each with a default
            if has_default(action.default) or spec_command and action.dest in field_names:
                assert "default" in _help_of(parser, action), (words, action.dest)
                checked += 1
    assert checked > 150
    with pytest.raises(SystemExit):
        main(["lab", "--help"])
    assert "--json" in capsys.readouterr().out


def test_data_options_name_the_formats_they_read():
    for words, spec in spec_commands():
        parser = spec_parser(spec, "x")
        for field in dataclasses.fields(spec.config_type):
            if field.metadata.get("path") == "data":
                action = next(a for a in parser._actions if a.dest == field.name)
                assert "csv" in _help_of(parser, action).lower(), (words, field.name)
    assert ".ndjson" in spec_parser(registry.get_spec("lazy-risk"), "x").format_help()


@pytest.mark.parametrize("value, kind, message", [
    ("{tmp}/none.txt", "data", "no such file: {tmp}/none.txt"),
    ("{tmp}", "data", ": give a .txt"),
    ("/dev/zero", "model", "/dev/zero is not a regular file or a folder"),
    ("{tmp}/none", "model", "no such file or folder: {tmp}/none"),
    ("model.gguf", "model", "no such model: 'model.gguf' is not a loaded model"),
    ("{tmp}/texts.txt", "folder", "{tmp}/texts.txt is not a folder"),
    ("{tmp}", "output", "{tmp} is a folder"),
    ("{tmp}/no/out.csv", "output", "no such folder: {tmp}/no"),
])
def test_paths_are_checked_for_what_the_option_needs(tmp_path, value, kind, message):
    (tmp_path / "texts.txt").write_text("a text\n")
    with pytest.raises(UserError, match=re.escape(message.format(tmp=tmp_path))):
        check_path(value.format(tmp=tmp_path), kind)
    check_path(str(tmp_path / "texts.txt"), "data")
    check_path(str(tmp_path), "folder")
    check_path(str(tmp_path / "out.csv"), "output")


def _tripwire(*args, **kwargs):
    raise AssertionError("the run started")


def test_cuda_without_a_gpu_is_refused_before_the_run(monkeypatch, capsys):
    import torch

    import core.jobs

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(core.jobs, "run_now", _tripwire)
    assert main(["extract", "--tiny", "--device", "cuda"]) == 2
    assert "no CUDA GPU is available" in capsys.readouterr().err
    assert main(["score", "--device", "cuda", "--model", "owner/name", "--input", "x.txt"]) == 2
    assert "no CUDA GPU is available" in capsys.readouterr().err


def test_a_non_utf8_argument_is_one_line_of_error(capsys):
    assert main(["toy", "--model", os.fsdecode(b"caf\xe9")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not UTF-8 text" in err and "\\udce9" in err


def test_bounds_sigma_refuses_an_option_of_the_other_target(capsys):
    base = ["bounds-sigma", "--q", "0.01", "--steps", "100"]
    assert main([*base, "--target-bits", "1", "--bits", "8", "--delta", "-1"]) == 2
    assert "--delta must be above 0 and below 1, not -1" in capsys.readouterr().err
    assert main([*base, "--target-bits", "1", "--bits", "8", "--delta", "0.5"]) == 2
    assert "--target-bits goes with --bits" in capsys.readouterr().err
    assert main([*base, "--target-epsilon", "1", "--delta", "1e-5", "--bits", "8"]) == 2
    assert "without --bits" in capsys.readouterr().err


def test_a_result_with_nan_is_printed_as_null_with_a_note(monkeypatch, capsys):
    import core.__main__

    monkeypatch.setattr(core.__main__, "dispatch",
                        lambda argv: {"auroc": float("nan"), "rows": [{"bound": float("inf")}]})
    assert main(["anything", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"auroc": None, "rows": [{"bound": None}]}
    assert "auroc = nan, rows[0].bound = inf: shown as null" in err and "undefined" in err


def test_dry_run_prints_the_estimate_and_runs_nothing(monkeypatch, capsys, no_loaded_models):
    import core.jobs
    from core.models import loaded_models

    monkeypatch.setattr(core.jobs, "run_now", _tripwire)
    assert main(["extract", "--tiny", "--dry-run", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["estimate"].startswith("about ") and "on this CPU" in printed["estimate"]
    assert printed["seconds"] > 0 and printed["peak_memory_bytes"] > 0
    assert any(part.startswith("generate 8 samples") for part in printed["work"])
    assert printed["assumptions"]
    assert main(["lab", "extraction", "--tiny", "--n", "16", "--dry-run"]) == 0
    assert "work: " in capsys.readouterr().out   # readable text without --json
    assert Store().runs() == [] and loaded_models() == []   # nothing ran, no weight loaded


def test_dry_run_of_a_spec_without_a_cost_model_says_so(capsys):
    assert main(["toy", "--n", "3", "--dry-run", "--json"]) == 0
    assert "toy has no cost model" in json.loads(capsys.readouterr().out)["estimate"]
    assert Store().runs() == []


def test_help_mentions_dry_run(capsys):
    with pytest.raises(SystemExit):
        main(["extract", "--help"])
    assert "--dry-run" in capsys.readouterr().out
    assert "--dry-run" in overview()
