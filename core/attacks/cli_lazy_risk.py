"""`python -m core lazy-risk --model M --calibration R --train FILE [--test FILE] --json`."""

from __future__ import annotations

from core.attacks.cli_extract import print_progress
from core.attacks.lazy_risk import LazyRiskConfig, run
from core.models import DEVICES
from core.serialize import to_jsonable

DEFAULTS = LazyRiskConfig()


def register(sub) -> None:
    parser = sub.add_parser(
        "lazy-risk", help="rank training sentences by lazy-sampling risk: probability of being "
                          "generated vs calibrated loss (Stock et al. 2022)")
    parser.add_argument("--model", default=DEFAULTS.model, help="target model source")
    parser.add_argument("--calibration", default=DEFAULTS.calibration,
                        help="calibration model, not trained on the data (same vocabulary)")
    parser.add_argument("--train", default=DEFAULTS.train,
                        help="training sentences: .txt (one per line), .json list, .jsonl with "
                             "\"text\", or demo:private_train")
    parser.add_argument("--test", default="", help="sentences never trained on (e.g. demo:user_samples)")
    parser.add_argument("--top-k", type=int, default=DEFAULTS.top_k, help="sampler top-k (0: none)")
    parser.add_argument("--temperature", type=float, default=DEFAULTS.temperature)
    parser.add_argument("--temperature-start", type=float, default=None,
                        help="decay linearly from this temperature over --decay-tokens tokens")
    parser.add_argument("--decay-tokens", type=int, default=DEFAULTS.decay_tokens)
    parser.add_argument("--generated", type=int, default=DEFAULTS.n_generated,
                        help="sentences to generate with the sampler for comparison")
    parser.add_argument("--rows", type=int, default=20, help="most at-risk training sentences printed")
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument("--device", choices=DEVICES, default=DEFAULTS.device)
    parser.set_defaults(func=lazy_risk_command)


def lazy_risk_command(args) -> dict:
    config = LazyRiskConfig(
        model=args.model, calibration=args.calibration, train=args.train, test=args.test,
        top_k=args.top_k, temperature=args.temperature,
        temperature_start=args.temperature if args.temperature_start is None else args.temperature_start,
        decay_tokens=args.decay_tokens, n_generated=args.generated, seed=args.seed, device=args.device)
    result = to_jsonable(run(config, progress=print_progress))
    train = [s for s in result["sentences"] if s["set"] == "train"]
    return {k: v for k, v in result.items() if k != "sentences"} | {"most_at_risk": train[: args.rows]}
