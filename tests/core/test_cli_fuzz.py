"""Bad values for every option of every command, run through ``core.__main__.main``: each is
refused with exit 2 (or 1) and one line on stderr, never a traceback, never a hang, and before
any work starts (the runs and the plain commands' work are replaced by a tripwire). Each case
has ``TIMEOUT_S``: past it the case fails (an alarm), or, stuck in C code the alarm cannot
interrupt, the process ends with a traceback of where it was (faulthandler)."""

import argparse
import contextlib
import dataclasses
import faulthandler
import io
import os
import signal
import sys
import time
import tracemalloc
import typing
from pathlib import Path

import pytest

import core.bounds.cli
import core.jobs
import core.models.cli
from cli_commands import is_leaf, plain_commands, spec_commands
from core import registry
from core.__main__ import main
from core.commands import overview, spec_parser

NOT_UTF8 = os.fsdecode(b"\xff")  # how Python hands a non-UTF-8 argv word over: a surrogate
LONG_PATH = "/tmp/" + "a" * 5_000   # ENAMETOOLONG where the system is asked about it
NUL_PATH = "/tmp/a\x00b"            # "embedded null byte" (a page or a script can pass one)
MISSING = ("/nonexistent/x.txt", "/dev/zero", NOT_UTF8, LONG_PATH, NUL_PATH)
VALUES = ("-1", "-0", "1e20", "1e308", "-1e308", "nan", "inf", "-inf", "", "abc",
          "/tmp") + MISSING
# The values of the table an option of each kind may accept (it then reaches the tripwire): zero
# as "-0", "" for an empty (= none) path, a folder for a model or a folder, any name to write,
# any text. Every other value must be refused.
MAY_PASS = {
    "number": {"-0"},
    "choice": set(),
    "data": {""},
    "model": {"", "/tmp", "1e20", "1e308", "nan", "inf", "abc"},  # shaped like hub ids (gpt2)
    "folder": {"", "/tmp"},
    "output": set(VALUES) - {"/tmp", *MISSING},
    "text": set(VALUES) - {NOT_UTF8},
}
# Valid values for the other required arguments of plain commands (by argparse dest).
BASE = {"sigma": "1", "q": "0.01", "steps": "100", "bits": "8", "delta": "1e-5",
        "target_bits": "1", "source": "owner/name", "model": "owner/name", "id": "1", "a": "1",
        "b": "2"}
SPEC_BASE = {"model": "owner/name", "data": "{samples}"}  # {samples}: a small CSV, see below
TIMEOUT_S = 20


class Reached(Exception):
    """A command got past its checks to its work."""


def _reached(*args, **kwargs):
    raise Reached()


@pytest.fixture(autouse=True)
def tripwire(monkeypatch):
    monkeypatch.setattr(core.jobs, "run_now", _reached)
    for module, name in ((core.bounds.cli, "_bounds"), (core.bounds.cli, "_inverse"),
                         (core.models.cli, "load_command"), (core.models.cli, "list_command"),
                         (core.models.cli, "score_command")):
        monkeypatch.setattr(module, name, _reached)


class Hung(BaseException):
    """A case past its time limit: a BaseException, which the CLI's last resort (it turns an
    OSError, TimeoutError among them, into one line and exit 2) does not catch."""


def _alarm(signum, frame):
    raise Hung(f"no answer within {TIMEOUT_S} s")


def run_main(argv: list[str]) -> tuple[object, str]:
    """``(exit code, or "reached" at the tripwire; stderr)``; other exceptions propagate, and
    ``Hung`` past ``TIMEOUT_S``."""
    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    faulthandler.dump_traceback_later(2 * TIMEOUT_S, exit=True, file=sys.__stderr__)  # backstop
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as stop:
        code = stop.code
    except Reached:
        code = "reached"
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


def _field_kind(field, kind) -> str:
    """The kind of a spec option, from its config field."""
    if field.metadata.get("path"):
        return field.metadata["path"]
    inner = typing.get_args(kind)[0] if typing.get_origin(kind) in (tuple, typing.Union) else kind
    if typing.get_origin(inner) is typing.Literal:
        return "choice"
    return "number" if inner in (int, float) else "text"


def _action_kind(action: argparse.Action) -> str:
    """The kind of a plain command's option, from its argparse action: any converter other than
    a path check (``core.cli_input.file_type``) reads numbers (``Number``, ids)."""
    name = getattr(action.type, "__name__", "")
    if action.choices:
        return "choice"
    if name.endswith(" path"):
        return name.removesuffix(" path")
    if action.type is Path:
        return "output"
    return "text" if action.type in (None, str) else "number"


def spec_cases():
    """``(command words, [(option, kind, base argv)])`` of every spec command; the base gives
    its other model and data fields valid values, so that the value tried is what is refused."""
    for words, spec in spec_commands():
        fields = {f.name: f for f in dataclasses.fields(spec.config_type)}
        hints = typing.get_type_hints(spec.config_type)
        actions = [a for a in spec_parser(spec, "x")._actions if a.dest in fields]
        valid = {a.dest: f"{a.option_strings[0]}={SPEC_BASE[fields[a.dest].metadata['path']]}"
                 for a in actions if fields[a.dest].metadata.get("path") in SPEC_BASE}
        options = [(a.option_strings[0], _field_kind(fields[a.dest], hints[a.dest]),
                    [word for dest, word in valid.items() if dest != a.dest]) for a in actions]
        yield words, options + [("--preset", "choice", list(valid.values()))]


def plain_cases():
    """The same for every plain (sub)command that does something, with ``BASE`` values for its
    other required arguments."""
    for words, parser in plain_commands():
        if not is_leaf(parser):
            continue
        actions = [a for a in parser._actions if a.nargs != 0 and a.dest != "help"]
        options = []
        for action in actions:
            base = [f"--{a.dest.replace('_', '-')}={BASE[a.dest]}" if a.option_strings
                    else BASE[a.dest] for a in actions
                    if a is not action and a.required and a.dest in BASE]
            if action.dest == "target_epsilon":  # the other target of a required pair
                base = [w for w in base if not w.startswith("--target-bits")] + ["--delta=0.1"]
            options.append((action.option_strings[0] if action.option_strings else None,
                            _action_kind(action), base))
        yield words, options


CASES = list(spec_cases()) + list(plain_cases())


@pytest.mark.parametrize("words, options", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_values_are_refused_in_one_line_before_any_work(words, options, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)   # an output named "abc" is tried (and removed) here
    samples = tmp_path / "samples.csv"
    samples.write_text("user_id,text\nu1,a first text\nu2,a second text\n")
    problems = []
    for option, kind, base in options:
        for value in VALUES:
            argv = [*(w.replace("{samples}", str(samples)) for w in [*words, *base]),
                    f"{option}={value}" if option else value]
            code, err = run_main(argv)
            lines = err.strip().splitlines()
            if code in ("reached", 0):  # 0: a cheap command (runs, demo show) ran
                if value not in MAY_PASS[kind]:
                    problems.append(f"{argv}: not refused")
            elif code not in (1, 2) or len(lines) != 1 or "Traceback" in err:
                problems.append(f"{argv}: exit {code}, stderr {err!r}")
    assert not problems, "\n".join(problems)


def test_the_cases_cover_every_command_and_kind():
    covered = {" ".join(words) for words, _ in CASES}
    assert set(registry.ENTRIES) <= covered and {"bounds", "score", "models load"} <= covered
    kinds = {kind for _, options in CASES for _, kind, _ in options}
    assert kinds == set(MAY_PASS)


def test_every_command_the_help_lists_is_fuzzed():
    """``python -m core --help``'s commands: each is a case's first word, or ``lab`` (below)."""
    listed = {line.split()[0] for line in overview().splitlines() if line.startswith("  ")}
    assert listed - {words[0] for words, _ in CASES} == {"lab"}


def test_lab_refuses_what_names_no_spec_in_one_line():
    """``lab NAME`` hands the rest to spec NAME's own parser (fuzzed above as NAME)."""
    for value in [*VALUES, "bounds", "lab"]:
        code, err = run_main(["lab", value])
        assert code in (1, 2) and len(err.strip().splitlines()) == 1, (value, code, err)
        assert "Traceback" not in err
    assert run_main(["lab", "list"])[0] == 0
    assert run_main(["lab", "dp-audit", "--confidence=2"])[0] == 2


def test_a_case_that_hangs_fails_at_its_time_limit(monkeypatch):
    """A command that never answers fails its case at ``TIMEOUT_S`` (here 1 s), though the CLI
    turns a TimeoutError into one line of refusal."""
    monkeypatch.setattr(sys.modules[__name__], "TIMEOUT_S", 1)
    monkeypatch.setattr(core.bounds.cli, "_bounds", lambda args: time.sleep(3600))
    started = time.monotonic()
    with pytest.raises(Hung, match="no answer within 1 s"):
        run_main(["bounds", *(f"--{k}={BASE[k]}" for k in ("sigma", "q", "steps", "bits", "delta"))])
    assert time.monotonic() - started < 5


# ---------------------------------------------------------------- σ: the lab's one range

SIGMA_RANGE_TEXT = "from 0.2 to 1,000"
TOO_SMALL_SIGMAS = ("0.001", "1e-300", "1e-5", "0.05", "0.19")


def sigma_cases():
    """``(command words, base argv)`` of every command with a ``--sigma`` option."""
    return [(words, base) for words, options in CASES for option, _, base in options
            if option == "--sigma"]


def test_sigma_commands_are_the_bounds_and_every_config_with_a_training_runs_sigma():
    assert {words[0] for words, _ in sigma_cases()} == {
        "bounds", "exposure", "inextractability", "mia", "audit", "audit-series", "dp-audit",
        "dp-canary-audit", "nid-audit"}


@pytest.mark.parametrize("words, base", sigma_cases(),
                         ids=[" ".join(words) for words, _ in sigma_cases()])
def test_sigma_below_the_range_is_refused_in_one_line_before_any_work(words, base, tmp_path):
    """σ = 0.001 asked the accountant for a 4 GiB array after the attack had run; every command
    refuses σ outside the one range, with the range, before any work (recorded by default)."""
    samples = tmp_path / "samples.csv"
    samples.write_text("user_id,text\nu1,a first text\nu2,a second text\n")
    argv = [w.replace("{samples}", str(samples)) for w in [*words, *base]]
    for value in TOO_SMALL_SIGMAS:
        code, err = run_main([*argv, f"--sigma={value}"])
        assert code == 2 and len(err.strip().splitlines()) == 1, (value, code, err)
        assert SIGMA_RANGE_TEXT in err and "Traceback" not in err, err
    assert SIGMA_RANGE_TEXT not in run_main([*argv, "--sigma=0.2"])[1]
    # a config's σ = 0 still means "no DP run given"; the bounds need a σ
    refused = SIGMA_RANGE_TEXT in run_main([*argv, "--sigma=0"])[1]
    assert refused == (words[0] == "bounds")


# ---------------------------------------------------------------- the audit's --set values

@pytest.mark.parametrize("setting, message", [
    ("extraction.n_samples=abc", "n_samples: expected a whole number, got 'abc'"),
    ("extraction.n_samples=1.5", "expected a whole number"),
    ("extraction.n_samples=nan", "expected a whole number"),
    ("extraction.n_samples=inf", "expected a whole number"),
    ("extraction.n_samples=-1", "from 1 to 500,000, not -1"),
    ("extraction.temperature_start=nan", "expected a finite number, got nan"),
    ("extraction.temperature_start=-inf", "expected a finite number, got -inf"),
    ("extraction.dedup=maybe", "dedup: expected true or false"),
    ("extraction.strategies=1,abc", "choose one of"),
])
def test_a_bad_audit_setting_is_one_line_before_any_work(setting, message):
    code, err = run_main(["audit", "--model=owner/name", "--set", setting])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert message in err


# ---------------------------------------------------------------- the DP auditor's scores file

RUN_NOW = core.jobs.run_now


@pytest.fixture
def real_runs(monkeypatch):
    """The run itself, recorded (the tripwire lifted): the file is read inside it."""
    monkeypatch.setattr(core.jobs, "run_now", RUN_NOW)


def _scores_file(path: Path, rows: list[str], header: str = "score,member") -> str:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return str(path)


def _one_error_line(code, err: str) -> bool:
    """Exit 2 and one line of error (a run's progress lines aside), no traceback."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("[")]
    return code == 2 and len(lines) == 1 and lines[0].startswith("error: ")


def _canaries(n: int) -> list[str]:
    return [f"{i % 7 / 7:.3f},{'true' if i % 2 else 'false'}" for i in range(n)]


@pytest.mark.parametrize("score", ["1e308", "-1e308", "1e13", "nan", "inf", "-inf", "abc", ""])
def test_an_absurd_or_non_finite_score_names_its_row(real_runs, tmp_path, score):
    """1e308 with −1e308 further down ended in numpy's "Too many bins for data range"."""
    rows = _canaries(30)
    rows[6] = f"{score},true"   # the file's 8th line: the header is row 1
    rows[20] = "-1e308,false"
    path = _scores_file(tmp_path / "scores.csv", rows)
    code, err = run_main(["dp-audit", "--scores", path])
    assert _one_error_line(code, err) and "row 8: score" in err, err


def test_a_scores_file_over_the_limit_is_refused_before_it_is_read(real_runs, tmp_path,
                                                                   monkeypatch):
    path = _scores_file(tmp_path / "scores.csv", _canaries(200))
    monkeypatch.setenv("LEAKAGE_LAB_MAX_SCORES_BYTES", "1000")
    code, err = run_main(["dp-audit", "--scores", path])
    assert _one_error_line(code, err), err
    assert "more than the 1,000 bytes" in err and "LEAKAGE_LAB_MAX_SCORES_BYTES" in err
    monkeypatch.setenv("LEAKAGE_LAB_MAX_SCORES_BYTES", "-5")
    code, err = run_main(["dp-audit", "--scores", path])
    assert _one_error_line(code, err) and "must be a positive whole number" in err, err
    monkeypatch.delenv("LEAKAGE_LAB_MAX_SCORES_BYTES")   # the default: 64 MiB
    with open(path, "a", encoding="utf-8") as out:
        out.write("0.5,true\n" * (64 * 2**20 // 9 + 1))
    code, err = run_main(["dp-audit", "--scores", path])
    assert _one_error_line(code, err) and "refused before reading it" in err, err
    assert "more than the 64.0 MiB" in err, err


def test_the_scores_file_is_read_row_by_row(real_runs, tmp_path):
    """A 40 MB file (2,000 canaries with a long note each) is read without holding it: the
    run's peak allocation stays far below the file's size."""
    note = "x" * 20_000
    rows = [f"{row},{note}" for row in _canaries(2_000)]
    path = _scores_file(tmp_path / "scores.csv", rows, header="score,member,note")
    size = Path(path).stat().st_size
    warm_up = _scores_file(tmp_path / "small.csv", _canaries(30))
    assert run_main(["dp-audit", "--scores", warm_up])[0] == 0   # the modules' imports
    tracemalloc.start()
    try:
        code, err = run_main(["dp-audit", "--scores", path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0, err
    assert size > 40e6 and peak < size / 8, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.0f} MB file"


# ---------------------------------------------------------------- what the system refuses

NESTED = "[" * 100_000 + "]" * 100_000   # json's decoder: RecursionError


def _unwritable(tmp_path: Path, suffix: str) -> str:
    """A file that cannot be written: read-only for a user; root writes any file, but nothing
    can be created at the top of /proc."""
    if os.geteuid() == 0:
        return f"/proc/leakage-lab-x{suffix}"
    path = tmp_path / f"read-only{suffix}"
    path.write_text("", encoding="utf-8")
    path.chmod(0o444)
    return str(path)


def _causes(tmp_path: Path) -> dict[str, list[str]]:
    """The argv of each cause that once ended in a traceback (the bad values of the table
    above are the rest: a 5,000-character path, a NUL byte, ±1e308)."""
    users = tmp_path / "users.csv"
    users.write_text("user_id,text\n" + "".join(
        f"u{i},one two three four five six seven eight nine ten\n" for i in range(6)))
    (tmp_path / "deep.json").write_text(NESTED)
    (tmp_path / "deep.jsonl").write_text('{"user_id": "u", "text": ' + NESTED + "}\n")
    (tmp_path / "scores.jsonl").write_text('{"score": ' + NESTED + ', "member": true}\n')
    under_a_file = str(users / "x.jsonl")
    canaries = ["user-inference-canaries", "--no-record", f"--data={users}"]
    return {
        "nested .json": [*canaries[:2], f"--data={tmp_path / 'deep.json'}"],
        "nested .jsonl": [*canaries[:2], f"--data={tmp_path / 'deep.jsonl'}"],
        "nested scores": ["dp-audit", "--no-record", f"--scores={tmp_path / 'scores.jsonl'}"],
        "--out under a file": [*canaries, f"--out={under_a_file}"],
        "--out unwritable": [*canaries, f"--out={_unwritable(tmp_path, '.jsonl')}"],
        "--output under a file": ["runs", "export", "1", f"--output={under_a_file}"],
        "--output unwritable": ["runs", "export", "1", f"--output={_unwritable(tmp_path, '')}"],
    }


def test_what_the_system_refuses_is_one_line(real_runs, tmp_path, monkeypatch):
    """Deeply nested JSON (RecursionError) and outputs that cannot be written (OSError), each
    read or written for real: one line, exit 2; nothing left where the output was tried."""
    monkeypatch.chdir(tmp_path)
    causes = _causes(tmp_path)
    assert run_main([*causes["--out under a file"][:3], "--out=copy.jsonl"])[0] == 0  # run 1
    problems = []
    for cause, argv in causes.items():
        code, err = run_main(argv)
        if not _one_error_line(code, err) or "Traceback" in err:
            problems.append(f"{cause}: exit {code}, stderr {err[-300:]!r}")
    assert not problems, "\n".join(problems)
    made = {"users.csv", "deep.json", "deep.jsonl", "scores.jsonl", "copy.jsonl", "lab-home",
            "read-only.jsonl", "read-only"}
    assert {p.name for p in tmp_path.iterdir()} <= made   # no output tried was left behind
