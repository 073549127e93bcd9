"""`python -m core extract --model M --reference R --strategy top-n --n N [--corpus FILE] --json`."""

from __future__ import annotations

import sys

from core.attacks.extraction import STRATEGIES, ExtractionConfig, ranked_rows, run
from core.models import DEVICES
from core.serialize import to_jsonable

DEFAULTS = ExtractionConfig()


def register(sub) -> None:
    parser = sub.add_parser(
        "extract", help="extract training data: generate samples, rank them by membership "
                        "metrics, verify them (Carlini et al. 2021)")
    parser.add_argument("--model", default=DEFAULTS.model, help="target model source")
    parser.add_argument("--reference", default=DEFAULTS.reference,
                        help="reference model (same vocabulary) for the ratio metric; 'none' skips it")
    parser.add_argument("--strategy", action="append", choices=STRATEGIES,
                        help="generation strategy (repeat for several; default top-n)")
    parser.add_argument("--n", type=int, default=DEFAULTS.n_samples, help="samples per strategy")
    parser.add_argument("--tokens", type=int, default=DEFAULTS.tokens, help="tokens per sample at most")
    parser.add_argument("--top-n", type=int, default=DEFAULTS.top_n, help="n of top-n sampling")
    parser.add_argument("--prefixes", default="", help="file of prefix documents (prefix strategy)")
    parser.add_argument("--corpus", default="",
                        help="training corpus to verify candidates against (demo:private_train on the demo)")
    parser.add_argument("--min-span", type=int, default=DEFAULTS.min_span_tokens,
                        help="verbatim tokens that count as memorised")
    parser.add_argument("--top-k", type=int, default=DEFAULTS.top_k, help="candidates per ranking")
    parser.add_argument("--window", type=int, default=DEFAULTS.window, help="sliding window (tokens)")
    parser.add_argument("--no-dedup", action="store_true", help="keep near-duplicates")
    parser.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size)
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument("--device", choices=DEVICES, default=DEFAULTS.device)
    parser.set_defaults(func=extract_command)


def print_progress(fraction: float, message: str = "", partial=None) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


def extract_command(args) -> dict:
    config = ExtractionConfig(
        model=args.model, reference="" if args.reference.lower() == "none" else args.reference,
        strategies=",".join(args.strategy or ["top-n"]), n_samples=args.n, tokens=args.tokens,
        top_n=args.top_n, prefixes=args.prefixes, corpus=args.corpus, min_span_tokens=args.min_span,
        top_k=args.top_k, window=args.window, dedup=not args.no_dedup, batch_size=args.batch_size,
        seed=args.seed, device=args.device)
    result = to_jsonable(run(config, progress=print_progress))
    summary = {k: v for k, v in result.items() if k not in ("candidates", "rankings")}
    return summary | {"ranked": {strategy: {metric: ranked_rows(result, strategy, metric)
                                            for metric in result["metrics"]}
                                 for strategy in result["rankings"]}}
