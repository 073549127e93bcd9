"""`python -m core bounds ...` and `python -m core bounds-sigma ...`: the Bound Explorer headless.

Every number has a range (``core.cli_input.Number``), refused in one line before any bound is
computed: past it the RDP arithmetic overflows (σ = 1e308), outgrows memory (σ = 0.001) or
answers a question nobody asks.
"""

from __future__ import annotations

from core.bounds.training_run import SIGMA_MAX, SIGMA_MIN
from core.cli_input import Number
from core.errors import UserError

SIGMA = Number(ge=SIGMA_MIN, le=SIGMA_MAX)   # the lab's one σ range (see training_run.py)
Q = Number(gt=0.0, le=1.0)
STEPS = Number(int, ge=1, le=10**9)
BITS = Number(gt=0.0, le=10_000.0)       # secret length b: p0 = 2^-b
DELTA = Number(gt=0.0, lt=1.0)
EPSILON = Number(gt=0.0, le=1000.0)


def register(sub) -> None:
    parser = sub.add_parser(
        "bounds",
        help="reconstruction leakage bounds and epsilon of DP-SGD (Stock et al. 2022)",
        description="Leakage L(p0) (bits) of a b-bit secret, the traditional min h, and epsilon.",
    )
    parser.add_argument("--sigma", type=SIGMA, required=True, help="noise multiplier σ")
    parser.add_argument("--q", type=Q, required=True, help="sampling rate q")
    parser.add_argument("--steps", type=STEPS, required=True, help="training steps T")
    parser.add_argument("--bits", type=BITS, required=True, help="secret length b (p0 = 2^-b)")
    parser.add_argument("--delta", type=DELTA, required=True, help="δ for epsilon")
    parser.add_argument("--tight", action="store_true",
                        help="also the tight privacy-profile bound (PLD accountant, seconds)")
    parser.set_defaults(func=_bounds)

    inverse = sub.add_parser(
        "bounds-sigma",
        help="smallest noise multiplier meeting a leakage or epsilon target",
        description="Smallest σ so that a b-bit secret leaks at most --target-bits (give --bits), "
                    "or so that epsilon at --delta is at most --target-epsilon (give --delta).",
    )
    inverse.add_argument("--q", type=Q, required=True, help="sampling rate q")
    inverse.add_argument("--steps", type=STEPS, required=True, help="training steps T")
    target = inverse.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-bits", type=BITS, help="most bits the secret may leak")
    target.add_argument("--target-epsilon", type=EPSILON, help="largest acceptable epsilon")
    inverse.add_argument("--bits", type=BITS, help="secret length b (with --target-bits only)")
    inverse.add_argument("--delta", type=DELTA, help="δ (with --target-epsilon only)")
    inverse.set_defaults(func=_inverse)


def _bounds(args):
    from core.bounds.summary import summarize

    return summarize(sigma=args.sigma, q=args.q, steps=args.steps, bits=args.bits,
                     delta=args.delta, tight=args.tight)


def _inverse(args):
    from core.bounds.inverse import sigma_for_epsilon, sigma_for_leakage

    if args.target_bits is not None:
        if args.bits is None or args.delta is not None:
            raise UserError("--target-bits goes with --bits (the secret's length) and without "
                            "--delta")
        return sigma_for_leakage(q=args.q, steps=args.steps, bits=args.bits,
                                 target_bits=args.target_bits)
    if args.delta is None or args.bits is not None:
        raise UserError("--target-epsilon goes with --delta and without --bits")
    return sigma_for_epsilon(q=args.q, steps=args.steps, delta=args.delta,
                             target_epsilon=args.target_epsilon)
