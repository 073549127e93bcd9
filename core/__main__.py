"""`python -m core <command> ... [--json]`: every computation of the app as a CLI command.

The command table and the options generated from spec configs are in ``core.commands``. A
command returns a dataclass or JSON-able value (printed as JSON with ``--json``, else as
readable text) or raises ``core.errors.UserError`` for bad input (one line on stderr, exit 2).
"""

from __future__ import annotations

import json
import sys

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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # accepted anywhere: prints one JSON object
    argv = [a for a in argv if a != "--json"]
    if not argv or argv[0] in ("-h", "--help"):
        print(overview())
        return 0
    try:
        result = to_jsonable(dispatch(argv))
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
