"""`python -m core bounds ...` and `python -m core bounds-sigma ...`: the Bound Explorer headless."""

from __future__ import annotations

from core.commands import whole_number
from core.errors import UserError


def register(sub) -> None:
    parser = sub.add_parser(
        "bounds",
        help="reconstruction leakage bounds and epsilon of DP-SGD (Stock et al. 2022)",
        description="Leakage L(p0) (bits) of a b-bit secret, the traditional min h, and epsilon.",
    )
    parser.add_argument("--sigma", type=float, required=True, help="noise multiplier σ > 0")
    parser.add_argument("--q", type=float, required=True, help="sampling rate in (0, 1]")
    parser.add_argument("--steps", type=whole_number, required=True, help="training steps T ≥ 1")
    parser.add_argument("--bits", type=float, required=True, help="secret length b > 0 (p0 = 2^-b)")
    parser.add_argument("--delta", type=float, required=True, help="δ in (0, 1) for epsilon")
    parser.add_argument("--tight", action="store_true",
                        help="also the tight privacy-profile bound (PLD accountant, seconds)")
    parser.set_defaults(func=_bounds)

    inverse = sub.add_parser(
        "bounds-sigma",
        help="smallest noise multiplier meeting a leakage or epsilon target",
        description="Smallest σ so that a b-bit secret leaks at most --target-bits, "
                    "or so that epsilon at --delta is at most --target-epsilon.",
    )
    inverse.add_argument("--q", type=float, required=True, help="sampling rate in (0, 1]")
    inverse.add_argument("--steps", type=whole_number, required=True, help="training steps T ≥ 1")
    target = inverse.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-bits", type=float, help="most bits the secret may leak")
    target.add_argument("--target-epsilon", type=float, help="largest acceptable epsilon")
    inverse.add_argument("--bits", type=float, help="secret length b (with --target-bits)")
    inverse.add_argument("--delta", type=float, help="δ (with --target-epsilon)")
    inverse.set_defaults(func=_inverse)


def _bounds(args):
    from core.bounds.summary import summarize

    return summarize(sigma=args.sigma, q=args.q, steps=args.steps, bits=args.bits,
                     delta=args.delta, tight=args.tight)


def _inverse(args):
    from core.bounds.inverse import sigma_for_epsilon, sigma_for_leakage

    if args.target_bits is not None:
        if args.bits is None:
            raise UserError("--target-bits needs --bits, the secret's length")
        return sigma_for_leakage(q=args.q, steps=args.steps, bits=args.bits,
                                 target_bits=args.target_bits)
    if args.delta is None:
        raise UserError("--target-epsilon needs --delta")
    return sigma_for_epsilon(q=args.q, steps=args.steps, delta=args.delta,
                             target_epsilon=args.target_epsilon)
