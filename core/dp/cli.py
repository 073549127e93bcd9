"""`python -m core ngram-canary ...`: is the reconstruction bound tight? (Stock et al. 2022, §4.1)"""

from __future__ import annotations

import dataclasses

from core.dp.ngram_canary import DEFAULT_SIGMAS, NgramCanaryConfig, run

DEFAULTS = NgramCanaryConfig()


def register(sub) -> None:
    parser = sub.add_parser(
        "ngram-canary",
        help="train N DP-SGD n-gram models on a random canary; empirical leakage vs the bound",
        description="Monte Carlo log(p1/p0) over N models trained with DP-SGD (q = 1) against "
                    "L(p0) and min h(alpha, p0). One --sigma prints one point; --sigmas a sweep.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--sigma", type=float, help="one noise multiplier σ > 0")
    which.add_argument("--sigmas", default=DEFAULT_SIGMAS,
                       help=f"comma-separated σ to sweep (default {DEFAULT_SIGMAS})")
    parser.add_argument("--steps", type=int, default=DEFAULTS.steps, help="DP-SGD steps")
    parser.add_argument("--models", type=int, default=DEFAULTS.models, help="N models per σ")
    parser.add_argument("--digits", type=int, default=DEFAULTS.digits, help="canary length T")
    parser.add_argument("--symbols", type=int, default=DEFAULTS.symbols, help="alphabet size D")
    parser.add_argument("--clip", type=float, default=DEFAULTS.clip, help="clipping norm C")
    parser.add_argument("--lr-scale", type=float, default=DEFAULTS.lr_scale,
                        help="learning rate η = lr_scale / σ")
    parser.add_argument("--bootstrap", type=int, default=DEFAULTS.bootstrap,
                        help="bootstrap resamples for the interval")
    parser.add_argument("--record", choices=("canary", "digit"), default=DEFAULTS.record,
                        help="one training record: the whole canary, or each digit (the paper's "
                             "reported statistics; the secret then spans T records)")
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=DEFAULTS.device)
    parser.set_defaults(func=_ngram_canary)


def _ngram_canary(args):
    config = NgramCanaryConfig(
        sigmas=str(args.sigma) if args.sigma is not None else args.sigmas,
        steps=args.steps, models=args.models, digits=args.digits, symbols=args.symbols,
        clip=args.clip, lr_scale=args.lr_scale, bootstrap=args.bootstrap, record=args.record, seed=args.seed,
        device=args.device,
    )
    result = run(config)
    if args.sigma is None:
        return result
    # One σ: the point's fields at the top level, with what defines the experiment.
    return {**dataclasses.asdict(result.points[0]), "log_p0": result.log_p0,
            "canary": result.canary, "steps": config.steps, "models": config.models,
            "device": result.device, "seconds": result.seconds}
