"""`python -m core demo build [options]` (the demo-build spec) and `python -m core demo show`."""

from __future__ import annotations

import argparse

from core.commands import run_spec_command
from core.demo.manifest import summary
from core.demo.paths import load_manifest
from core.registry import get_spec


def register(sub) -> None:
    parser = sub.add_parser("demo", help="the demo scenario (two tiny Shakespeare GPT-2 snapshots)")
    demo_sub = parser.add_subparsers(dest="demo_command", required=True)
    # The spec's own parser reads the options: "+" as the prefix keeps argparse from taking
    # `--tiny` or `--help` for options of this subcommand, so they all reach the spec.
    build = demo_sub.add_parser("build", add_help=False, prefix_chars="+",
                                help="train demo:base and demo:updated (cached); "
                                     "`demo build --help` lists the options")
    build.add_argument("options", nargs=argparse.REMAINDER)
    build.set_defaults(func=build_command)
    show = demo_sub.add_parser("show", help="summarise the built demo's manifest")
    show.set_defaults(func=lambda args: summary(load_manifest()))


def build_command(args):
    """The ``demo-build`` spec on the options given (recorded like every spec run)."""
    return run_spec_command(get_spec("demo-build"), args.options, "python -m core demo build")
