"""`python -m core lab NAME [--field VALUE ...] --json`: run any registered attack.

The options are made from the fields of the attack's config dataclass (``--batch-size 4``
sets ``batch_size``); ``--tiny`` starts from the attack's tiny config instead of the defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing

from core.attacks.base import AttackSpec
from core.attacks.registry import all_attacks, get_attack
from core.errors import UserError


def register(sub) -> None:
    parser = sub.add_parser("lab", help="run a registered attack or lab by name")
    parser.add_argument("name", help="attack name (`python -m core lab list` lists them)")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="--field value ... for the config")
    parser.set_defaults(func=run_command)


def _parse_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def config_parser(spec: AttackSpec) -> argparse.ArgumentParser:
    """An argparse parser with one ``--field`` option per field of the attack's config."""
    parser = argparse.ArgumentParser(prog=f"python -m core lab {spec.name}", exit_on_error=False)
    parser.add_argument("--tiny", action="store_true", help="start from the tiny config")
    hints = typing.get_type_hints(spec.config_type)
    for field in dataclasses.fields(spec.config_type):
        kind = hints[field.name]
        choices = typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else None
        convert = _parse_bool if kind is bool else (type(choices[0]) if choices else kind)
        parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, type=convert,
                            choices=choices, default=None)
    return parser


def build_config(spec: AttackSpec, options: list[str]):
    """The attack's config from CLI options; bad options raise ``UserError``."""
    try:
        args = config_parser(spec).parse_args(options)
    except (argparse.ArgumentError, SystemExit) as err:
        raise UserError(f"{spec.name}: {err}") from None
    base = spec.tiny_config() if args.tiny else spec.config_type()
    changes = {k: v for k, v in vars(args).items() if k != "tiny" and v is not None}
    try:
        return dataclasses.replace(base, **changes)
    except ValueError as err:
        raise UserError(f"{spec.name}: {err}") from None


def run_command(args):
    if args.name == "list":
        return {name: {"title": s.title, "kind": s.kind} for name, s in all_attacks().items()}
    spec = get_attack(args.name)
    return spec.run(build_config(spec, args.options))
