"""`python -m core runs list|show|compare|cancel|delete|export ...`: the results store from the
shell. Run ids (and ``--limit``) are whole numbers from 1 to SQLite's largest integer; others
are refused in one line."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import UserError
from core.jobs.compare import compare_runs
from core.jobs.runner import cancel
from core.jobs.export import export_csv, export_json
from core.jobs.store import get_store

SQLITE_MAX_INT = 2**63 - 1


def positive(text: str) -> int:
    """The ``type`` of run ids and ``--limit``: a whole number from 1 to ``SQLITE_MAX_INT``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= SQLITE_MAX_INT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {SQLITE_MAX_INT:,}, not {text}")
    return value


def register(sub) -> None:
    parser = sub.add_parser("runs", help="list, show, compare, cancel, delete or export "
                                         "recorded runs")
    runs = parser.add_subparsers(dest="runs_command", required=True)

    listing = runs.add_parser("list", help="recorded runs, newest first")
    listing.add_argument("--kind", help="only runs of this kind (e.g. an attack name)")
    listing.add_argument("--limit", type=positive, help="at most this many")
    listing.set_defaults(func=list_runs)

    show = runs.add_parser("show", help="one run with its parameters and result")
    show.add_argument("id", type=positive)
    show.set_defaults(func=lambda args: get_store().get(args.id).to_dict())

    compare = runs.add_parser("compare", help="parameter and result differences of two runs")
    compare.add_argument("a", type=positive)
    compare.add_argument("b", type=positive)
    compare.set_defaults(func=compare_two)

    stop = runs.add_parser("cancel", help="stop a queued or running run (of any process); it "
                                          "keeps what it has found")
    stop.add_argument("id", type=positive)
    stop.set_defaults(func=cancel_run)

    delete = runs.add_parser("delete", help="delete a finished run")
    delete.add_argument("id", type=positive)
    delete.set_defaults(func=delete_run)

    export = runs.add_parser("export", help="write a run to a JSON file or its result table to CSV")
    export.add_argument("id", type=positive)
    export.add_argument("--format", choices=("csv", "json"), default="json")
    export.add_argument("--output", type=Path, help="file to write (default: run-ID.FORMAT)")
    export.set_defaults(func=export_run)


def list_runs(args: argparse.Namespace) -> list[dict]:
    return [run.summary() for run in get_store().summaries(args.kind, limit=args.limit)]


def compare_two(args: argparse.Namespace) -> dict:
    store = get_store()
    return compare_runs(store.get(args.a), store.get(args.b))


def cancel_run(args: argparse.Namespace) -> dict:
    if not cancel(args.id):
        raise UserError(f"run {args.id} has already finished "
                        f"({get_store().get(args.id).status}): there is nothing to cancel")
    return {"cancel_requested": args.id}


def delete_run(args: argparse.Namespace) -> dict:
    get_store().delete(args.id)
    return {"deleted": args.id}


def export_run(args: argparse.Namespace) -> dict:
    run = get_store().get(args.id)
    text = export_csv(run) if args.format == "csv" else export_json(run)
    output = args.output or Path(f"run-{args.id}.{args.format}")
    output.write_text(text, encoding="utf-8")
    return {"id": args.id, "format": args.format, "path": str(output.resolve())}
