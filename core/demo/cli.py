"""`python -m core demo build [--tiny] [--force] [--user-split S]` and `python -m core demo show`."""

from __future__ import annotations

import dataclasses
import sys

from core.demo import scenario


def register(sub) -> None:
    parser = sub.add_parser("demo", help="the demo scenario (two tiny Shakespeare GPT-2 snapshots)")
    demo_sub = parser.add_subparsers(dest="demo_command", required=True)
    build = demo_sub.add_parser("build", help="train demo:base and demo:updated (cached)")
    build.add_argument("--tiny", action="store_true", help="the seconds-long test configuration")
    build.add_argument("--force", action="store_true", help="rebuild even if a build is cached")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--user-split", choices=scenario.USER_SPLITS,
                       help=f"how users are split into held-in and held-out (default "
                            f"{scenario.DemoConfig.user_split}): "
                            + "; ".join(f"{k}: {v}" for k, v in scenario.USER_SPLITS.items()))
    build.set_defaults(func=build_command)
    show = demo_sub.add_parser("show", help="summarise the built demo's manifest")
    show.set_defaults(func=lambda args: scenario.summary(scenario.load_manifest()))


def _print_progress(fraction: float, message: str = "", partial=None) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


def build_command(args) -> dict:
    config = scenario.tiny_config(args.seed) if args.tiny else scenario.DemoConfig(seed=args.seed)
    if args.user_split:
        config = dataclasses.replace(config, user_split=args.user_split)
    manifest = scenario.build(config, force=args.force, progress=_print_progress)
    return scenario.summary(manifest)
