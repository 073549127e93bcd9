"""`python -m core <command> ... [--json]`: every computation of the app as a CLI command.

The command table and the options generated from spec configs are in ``core.commands``. A
command returns a dataclass or JSON-able value (printed as JSON with ``--json``, else as
readable text) or raises ``core.errors.UserError`` for bad input (one line on stderr, exit 2;
argparse's own errors exit 2 as well). As a last resort, what no check foresaw (a file the
system refuses, input nested too deeply to parse, a number too large) is one line and exit 2.
Numbers that are not finite are printed as null, with a note on stderr naming them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

from core.cli_input import shorten
from core import registry
from core.commands import dispatch, overview
from core.errors import UserError
from core.serialize import to_jsonable


def _print_text(result) -> None:
    """Top-level fields one per line; long lists and tables are left to ``--json``."""
    if not isinstance(result, dict):
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        if isinstance(value, list) and len(value) > 10:
            value = f"[{len(value)} items: see --json]"
        print(f"{key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")


def check_encoding(argv: list[str]) -> None:
    """A ``UserError`` for a word that is not UTF-8 (Python keeps its bytes as surrogates)."""
    for word in argv:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(f"the argument {ascii(word)} is not UTF-8 text: give paths and "
                            "values in UTF-8") from None


def non_finite(value: Any, where: str = "") -> list[str]:
    """Where ``value`` (a result) holds NaN or ±inf, e.g. ``["texts[2].perplexity"]``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        value = value.tolist()
    if isinstance(value, dict):
        return [w for k, v in value.items()
                for w in non_finite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, (list, tuple)):
        return [w for i, v in enumerate(value) for w in non_finite(v, f"{where}[{i}]")]
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where} = {value}"]
    return []


def _note_non_finite(result: Any) -> None:
    """Says on stderr which numbers came out NaN (undefined) or infinite, shown as null."""
    places = non_finite(result)
    if places:
        shown = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
        print(f"note: {shown}: shown as null. nan means the quantity is undefined for these "
              "inputs (e.g. nothing to average over; see the result's notes), inf that it is "
              "unbounded", file=sys.stderr)


def last_resort(err: BaseException) -> str:
    """One line for an error no check turned into a ``UserError``."""
    if isinstance(err, RecursionError):
        text = ("the input is nested too deeply to read (e.g. a JSON value inside thousands of "
                "brackets)")
    elif isinstance(err, OverflowError):
        text = f"a number is too large to compute with ({err}): give values of a sensible size"
    else:   # an OSError: the system's reason, and the file
        where = f": {shorten(err.filename)}" if getattr(err, "filename", None) else ""
        text = f"{getattr(err, 'strerror', None) or err or type(err).__name__}{where}"
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # accepted anywhere: prints one JSON object
    argv = [a for a in argv if a != "--json"]
    try:
        registry.load_plugins()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help"):
        print(overview())
        return 0
    try:
        check_encoding(argv)
        raw = dispatch(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (OSError, RecursionError, OverflowError) as err:   # the last resort
        print(f"error: {last_resort(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    result = to_jsonable(raw)
    if as_json:
        print(json.dumps(result, allow_nan=False))
    else:
        _print_text(result)
    _note_non_finite(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
