"""`python -m core <command> ... [--json]`: every computation of the app as a CLI command.

Each concern contributes its commands from modules named ``cli`` or ``cli_<name>`` inside its
package (``core/bounds/cli.py``, ``core/attacks/cli_extract.py``, ...). Such a module defines
``register(subparsers)``, adding one or more sub-commands whose ``func(args)`` returns a
JSON-able object (printed as JSON with ``--json``, else as readable text) or raises
``core.errors.UserError`` for bad input (one line on stderr, exit code 2).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

import core
from core.errors import UserError
from core.serialize import to_jsonable


def _cli_modules():
    """Every ``core.<package>.cli`` and ``core.<package>.cli_<name>`` module, in name order."""
    for package in sorted(pkgutil.iter_modules(core.__path__), key=lambda m: m.name):
        if not package.ispkg:
            continue
        path = [str(Path(core.__path__[0]) / package.name)]
        for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
            if info.name == "cli" or info.name.startswith("cli_"):
                yield importlib.import_module(f"core.{package.name}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _cli_modules():
        module.register(sub)
    return parser


def _print_text(result) -> None:
    if isinstance(result, dict):
        for key, value in result.items():
            print(f"{key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")
    else:
        print(json.dumps(result, indent=2))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # accepted anywhere: prints one JSON object
    args = build_parser().parse_args([a for a in argv if a != "--json"])
    try:
        result = to_jsonable(args.func(args))
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(result, allow_nan=False))
    else:
        _print_text(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
