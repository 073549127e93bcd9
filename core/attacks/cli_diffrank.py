"""`python -m core diffrank --before A --after B --length L --beam K [--groups G] [--phrase "..."]
[--relative] [--swap] --json`: differential score and rank between two model snapshots
(Zanella-Béguelin, Tople et al. 2020)."""

from __future__ import annotations

from core.attacks.diffrank import DiffRankConfig, run
from core.jobs import run_now

DEFAULTS = DiffRankConfig()


def register(sub) -> None:
    parser = sub.add_parser(
        "diffrank",
        help="sequences whose probability rose most between two model snapshots (beam search)",
        description="Beam search (width halved each step) for the token sequences with the "
                    "highest differential score DS = Σ p_after − p_before (or relative RDS), "
                    "and a phrase's per-token scores, prefix knowledge and differential rank.",
    )
    parser.add_argument("--before", default=DEFAULTS.before, help="model before the update")
    parser.add_argument("--after", default=DEFAULTS.after, help="model after the update")
    parser.add_argument("--length", type=int, default=DEFAULTS.length, help="L: tokens per sequence")
    parser.add_argument("--beam", type=int, default=DEFAULTS.beam,
                        help="k: initial beam width, halved at every step")
    parser.add_argument("--groups", type=int, default=DEFAULTS.groups,
                        help="G: group beam search over G groups of first tokens (1: vanilla)")
    parser.add_argument("--phrase", default="", help="a phrase to score token by token and rank")
    parser.add_argument("--relative", action="store_true", help="rank by RDS instead of DS")
    parser.add_argument("--swap", action="store_true",
                        help="exchange before and after: what did the update remove?")
    parser.add_argument("--exhaustive-limit", type=int, default=DEFAULTS.exhaustive_limit,
                        help="enumerate all |V|^L sequences for the exact rank up to this many")
    parser.set_defaults(func=_diffrank)


def _diffrank(args):
    config = DiffRankConfig(before=args.before, after=args.after, length=args.length,
                            beam=args.beam, groups=args.groups, phrase=args.phrase,
                            relative=args.relative, swap=args.swap,
                            exhaustive_limit=args.exhaustive_limit)
    return run_now("diffrank", config, lambda progress, cancel: run(config, progress=progress,
                                                                     cancel=cancel),
                   title=config.title())

