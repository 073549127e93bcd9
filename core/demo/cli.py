"""`python -m core demo build [options]` (the demo-build spec) and `python -m core demo show`."""

from __future__ import annotations

from core.demo import paths
from core.demo.manifest import summary


def register(sub) -> None:
    parser = sub.add_parser("demo", help="the demo scenario (two tiny Shakespeare GPT-2 snapshots)")
    demo_sub = parser.add_subparsers(dest="demo_command", required=True)
    build = demo_sub.add_parser("build", add_help=False,
                                help="train demo:base and demo:updated (cached); "
                                     "`demo build --help` lists the options")
    build.set_defaults(func=build_command, passes_options=True)
    show = demo_sub.add_parser("show", help="summarise the built demo's manifest")
    show.set_defaults(func=lambda args: summary(paths.load_manifest()))


def build_command(args) -> dict:
    from core.commands import run_spec_command
    from core.registry import get_spec

    result = run_spec_command(get_spec("demo-build"), args.extra, "python -m core demo build")
    return result.summary
