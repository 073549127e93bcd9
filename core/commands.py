"""The CLI's commands: every registered spec (options generated from its config) and a few plain
commands (bounds, models, score, runs, demo). Nothing is imported until its command is chosen,
so ``python -m core bounds`` never loads torch.

A spec's options come from its config fields (``core.specs.param``): ``--field-name`` (plus the
flags the field lists), typed by the field (whole numbers also as ``186e3``; tuples take several
values or a comma list; booleans as ``--x/--no-x``), with the field's help, default and range.
Every spec command also takes ``--tiny`` (start from the tiny config), ``--preset NAME`` (start
from a plug-in's values, e.g. ``demo``), ``--no-record`` (do not store the run) and
``--dry-run`` (print the run's estimated time and peak memory, ``core.cost``, and run nothing).

Bad input is refused before any run starts, in one line: numbers out of range (``check_params``;
``core.cli_input.Number`` for plain options), paths that do not name what a field needs
(``check_path``), ``--device cuda`` without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import typing
from typing import Any, NamedTuple

from core import registry
from core.cli_input import JSON_HELP, CliParser, check_file, path_errors, word_reader
from core.errors import UserError
from core.specs import AttackSpec, describe_range, optional_inner


class Plain(NamedTuple):
    module: str   # defines register(subparsers), adding this command
    help: str


PLAIN: dict[str, Plain] = {
    "bounds": Plain("core.bounds.cli", "reconstruction leakage bounds and ε of DP-SGD "
                    "(Stock et al. 2022)"),
    "bounds-sigma": Plain("core.bounds.cli", "smallest σ meeting a leakage or ε target"),
    "models": Plain("core.models.cli", "load language models and show their cards"),
    "score": Plain("core.models.cli", "per-token log-probabilities of texts under a model"),
    "runs": Plain("core.jobs.cli", "list, show, compare, cancel, delete or export recorded runs"),
    "demo": Plain("core.demo.cli", "the demo scenario: `demo build` (= demo-build), `demo show`"),
}


def overview() -> str:
    """The top-level help: every command with one line, without importing any of them."""
    lines = ["usage: python -m core COMMAND [options] [--json]", "",
             "Every computation of the app as a command; `python -m core COMMAND --help` lists "
             "its options and defaults.", "", "attacks, labs and experiments:"]
    for name, entry in list(registry.ENTRIES.items()):
        alias = f" (also: {', '.join(entry.aliases)})" if entry.aliases else ""
        lines.append(f"  {name:31s} {entry.help}{alias}")
    lines += ["", "other commands:"]
    lines += [f"  {name:31s} {plain.help}" for name, plain in PLAIN.items()]
    lines += [f"  {'lab NAME | lab list':31s} run a spec by name / list them"]
    lines += ["", "--json prints one JSON object; spec runs are recorded in the results store "
              "(see `runs list`) unless --no-record is given; --dry-run prints a run's estimated "
              "time and peak memory and runs nothing."]
    return "\n".join(lines)


# ------------------------------------------------------------------ options from a config


def _or_none(convert):
    """``convert``, with the word "none" read as None (for an ``X | None`` field)."""
    def read(text: str):
        return None if text.strip().lower() == "none" else convert(text)

    read.__name__ = getattr(convert, "__name__", "value")
    return read


class _Items(argparse.Action):
    """Collects several values, each possibly a comma list: ``--sigmas 0.5 1,2`` -> (0.5, 1, 2).
    Free text (a tuple of str) is taken word for word: a comma may belong to the text."""

    def __init__(self, *args, convert, split, **kwargs):
        super().__init__(*args, **kwargs)
        self.convert, self.split = convert, split

    def __call__(self, parser, namespace, values, option_string=None):
        words = ([w.strip() for value in values for w in value.split(",") if w.strip()]
                 if self.split else list(values))
        if not words:
            raise argparse.ArgumentError(self, "expected at least one value")
        try:  # a repeated flag adds to the values before it
            setattr(namespace, self.dest, (getattr(namespace, self.dest) or ())
                    + tuple(self.convert(w) for w in words))
        except (argparse.ArgumentTypeError, ValueError) as err:
            raise argparse.ArgumentError(self, str(err)) from None


def _option_kwargs(kind: Any) -> dict:
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(kind) is tuple:
        element = typing.get_args(kind)[0]
        return {"action": _Items, "nargs": "+", "convert": word_reader(element),
                "split": element is not str}
    inner = optional_inner(kind)
    if inner is not None:
        return {"type": _or_none(word_reader(inner))}
    options = {"type": word_reader(kind)}
    if typing.get_origin(kind) is typing.Literal:
        options["choices"] = typing.get_args(kind)
    return options


def _formats_note(field: dataclasses.Field) -> str:
    """For a data field whose help names no format: the formats ``core.readers.data`` reads."""
    if field.metadata.get("path") != "data" or "csv" in field.metadata.get("help", "").lower():
        return ""
    from core.readers.data import SUFFIXES

    return f"; a {', '.join(SUFFIXES)} file or a named data source"


def _field_help(field: dataclasses.Field) -> str:
    text = field.metadata.get("help", "")
    default = field.default
    shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
    extra = f"default: {shown!r}" if isinstance(shown, str) else f"default: {shown}"
    span = describe_range(field)
    choices = field.metadata.get("choices")
    span = f"of {', '.join(choices())}" if choices else span
    extra += f"{'; ' + span if span else ''}{_formats_note(field)}"
    return f"{text} ({extra})".replace("%", "%%")


def spec_parser(spec: AttackSpec, prog: str) -> argparse.ArgumentParser:
    """An argparse parser with one option per field of the spec's config."""
    parser = CliParser(prog=prog, description=spec.title)
    hints = typing.get_type_hints(spec.config_type)
    for field in dataclasses.fields(spec.config_type):
        flags = (f"--{field.name.replace('_', '-')}", *field.metadata.get("flags", ()))
        parser.add_argument(*dict.fromkeys(flags), dest=field.name, default=None,
                            help=_field_help(field), **_option_kwargs(hints[field.name]))
    parser.add_argument("--tiny", action="store_true", help="start from the tiny config (seconds)")
    parser.add_argument("--preset", help="start from a plug-in's preset, e.g. demo")
    parser.add_argument("--no-record", action="store_true", help="do not store the run")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the run's estimated time and peak memory on this machine, "
                             "the work they count and their assumptions, and run nothing")
    parser.add_argument("--ray", metavar="auto|ADDRESS",
                        help="score on Ray workers: 'auto' (this machine's cluster, else a local "
                             "one) or a cluster address; without it everything runs in process")
    parser.add_argument("--ray-workers", type=int, default=0, metavar="N",
                        help="Ray workers per model (default 0: one per GPU, else one per CPU)")
    return parser


def build_config(spec: AttackSpec, args: argparse.Namespace) -> Any:
    """The config: defaults, then ``--tiny`` or ``--preset`` values, then the options given."""
    from core import sources

    values = {}
    if args.tiny:
        tiny = spec.tiny_config()
        values = {f.name: getattr(tiny, f.name) for f in dataclasses.fields(tiny)}
    if args.preset is not None:  # also "": refused, not ignored
        if args.preset not in sources.preset_names(spec.name):
            raise UserError(f"{spec.name} has no preset {args.preset!r}; it has: "
                            f"{', '.join(sources.preset_names(spec.name)) or 'none'}")
        values |= sources.preset(spec.name, args.preset)
    names = {f.name for f in dataclasses.fields(spec.config_type)}
    values |= {k: v for k, v in vars(args).items() if k in names and v is not None}
    try:
        return spec.config_type(**values)
    except TypeError as err:  # a field without a default was not given
        raise UserError(f"{spec.name}: {err}") from None


def check_path(value: str, kind: str) -> None:
    """A one-line ``UserError`` unless ``value`` names what a ``path`` field of this ``kind``
    (``core.specs.PATH_KINDS``) needs; empty values are left to the config."""
    if kind == "model":
        from core.models.cli import check_model_source

        with path_errors(value):   # a 5,000-character path: one line, not an OSError
            check_model_source(value)
    else:
        check_file(value, kind)


def check_inputs(config: Any) -> None:
    """What a run would find out only once started: each ``path`` field names what it should,
    and a CUDA device asked for exists (``resolve_device``, the loaders' own check)."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.metadata.get("path") and value is not None:
            for item in value if isinstance(value, tuple) else (value,):
                check_path(item, field.metadata["path"])
    if getattr(config, "device", None) == "cuda":
        from core.models.loaded import resolve_device

        resolve_device("cuda")


def dry_run(spec: AttackSpec, config: Any) -> dict:
    """What ``--dry-run`` prints: the run's estimate (``core.cost``), loading no weight and
    recording nothing."""
    from core import cost

    estimate = cost.estimate(spec, config)
    if estimate is None:
        return {"estimate": f"none: {spec.name} has no cost model (core.cost estimates the "
                            "specs that load language models)"}
    return cost.report(estimate)


def run_spec_command(spec: AttackSpec, argv: list[str], prog: str) -> Any:
    """Parse ``argv`` for ``spec``, check it, run it (recorded unless ``--no-record``) and
    return the result; with ``--dry-run``, its estimate instead."""
    from core import scaleout
    from core.jobs import run_now

    args = spec_parser(spec, prog).parse_args(argv)
    config = build_config(spec, args)
    check_inputs(config)
    if args.dry_run:
        return dry_run(spec, config)
    settings = None if args.ray is None else scaleout.ScaleOut(args.ray, args.ray_workers)
    with scaleout.using(settings):
        return run_now(spec, config, record=not args.no_record)


# ------------------------------------------------------------------ dispatch


def _plain_parser(command: str) -> argparse.ArgumentParser:
    parser = CliParser(prog="python -m core")
    sub = parser.add_subparsers(dest="command", required=True)
    importlib.import_module(PLAIN[command].module).register(sub)
    return parser


def _lab(argv: list[str]) -> Any:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m core lab NAME [options] [--json] | python -m core lab list "
              "[--json]\n\nRun a spec by its name (`python -m core lab NAME --help` lists its "
              f"options); `lab list` lists them.\n\n  --json  {JSON_HELP}")
        raise SystemExit(0)
    if not argv or argv[0] == "list":
        return {name: entry.help for name, entry in list(registry.ENTRIES.items())}
    spec = registry.get_spec(argv[0])
    return run_spec_command(spec, argv[1:], f"python -m core lab {spec.name}")


def dispatch(argv: list[str]) -> Any:
    """Run the command ``argv`` names and return its JSON-able (or dataclass) result."""
    command, rest = argv[0], argv[1:]
    if command == "lab":
        return _lab(rest)
    name = registry.spec_name(command)
    if name is not None:
        return run_spec_command(registry.get_spec(name), rest, f"python -m core {command}")
    if command in PLAIN:
        args = _plain_parser(command).parse_args(argv)
        return args.func(args)
    raise UserError(f"unknown command {command!r}: `python -m core --help` lists them")
