"""`python -m core user-inference ...`: user inference (Kandpal et al. 2023), canary users, mitigations.

    python -m core user-inference --model demo:updated --reference demo:base \
        --data demo:user_samples [--bootstrap 1000] --json
    python -m core user-inference-canaries --data FILE --words 8 --count 5 --out COPY.jsonl
    python -m core user-inference-mitigate [--no-dedup] [--per-user-limit 5] --json
    python -m core user-inference-canary-retrain [--words 8] [--per-side 5] --json
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from core.attacks import user_inference as ui
from core.attacks import user_whatif as whatif
from core.errors import UserError

DEFAULTS = ui.UserInferenceConfig()
MITIGATION = whatif.MitigationConfig()
CANARIES = whatif.CanaryRetrainConfig()


def register(sub) -> None:
    attack = sub.add_parser("user-inference", help="was this user's data used to fine-tune the "
                            "model? T̂ per user, AUROC and TPR at low FPR (Kandpal et al. 2023)")
    attack.add_argument("--model", default=DEFAULTS.model, help="the fine-tuned (target) model")
    attack.add_argument("--reference", default=DEFAULTS.reference,
                        help="the reference model, e.g. the model before fine-tuning")
    attack.add_argument("--data", default=DEFAULTS.data,
                        help="CSV or JSONL with user_id, text and optionally member (true/false); "
                             f"{ui.DEMO_DATA} is the demo's attacker-side samples")
    attack.add_argument("--bootstrap", type=int, default=DEFAULTS.bootstrap,
                        help="bootstrap resamples of users for the intervals (0: none)")
    attack.add_argument("--draws", type=int, default=DEFAULTS.knowledge_draws,
                        help="random draws per m for the attacker-knowledge curve (0: none)")
    attack.add_argument("--calibration-fpr", type=float, default=DEFAULTS.calibration_fpr,
                        help="FPR of the threshold calibrated on users with member = false")
    attack.add_argument("--seed", type=int, default=DEFAULTS.seed)
    attack.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size, help="0: automatic")
    attack.add_argument("--samples", action="store_true", help="also print the per-sample scores")
    attack.set_defaults(func=_attack)

    canaries = sub.add_parser("user-inference-canaries",
                              help="copy a user-samples file with canary users sharing a substring "
                                   "(Kandpal et al. Algorithm 1)")
    canaries.add_argument("--data", required=True, help="CSV or JSONL with user_id and text")
    canaries.add_argument("--words", type=int, default=8, help="length of the shared substring")
    canaries.add_argument("--count", type=int, default=1, help="canary users drawn at random")
    canaries.add_argument("--users", default="", help="comma-separated user ids (instead of --count)")
    canaries.add_argument("--seed", type=int, default=0)
    canaries.add_argument("--out", required=True, help="where to write the copy (.csv or .jsonl)")
    canaries.set_defaults(func=_canaries)

    mitigate = sub.add_parser("user-inference-mitigate",
                              help="retrain demo:updated with within-user dedup and/or a per-user "
                                   "sample limit and compare the attack's AUROC")
    mitigate.add_argument("--no-dedup", action="store_true", help="no within-user deduplication")
    mitigate.add_argument("--dedup-words", type=int, default=MITIGATION.dedup_words,
                          help="dedup removes repeated runs of this many words")
    mitigate.add_argument("--per-user-limit", type=int, default=0, help="0: no limit")
    mitigate.add_argument("--bootstrap", type=int, default=MITIGATION.bootstrap)
    mitigate.add_argument("--seed", type=int, default=0)
    mitigate.set_defaults(func=_mitigate)

    retrain = sub.add_parser("user-inference-canary-retrain",
                             help="retrain demo:updated with canary users (Algorithm 1 on the demo) "
                                  "and compare the same users as real and as canary users")
    retrain.add_argument("--words", type=int, default=CANARIES.words, help="shared substring length")
    retrain.add_argument("--per-side", type=int, default=CANARIES.per_side,
                         help="canary users among the held-in and as many among the held-out")
    retrain.add_argument("--bootstrap", type=int, default=CANARIES.bootstrap)
    retrain.add_argument("--seed", type=int, default=CANARIES.seed)
    retrain.set_defaults(func=_canary_retrain)


def _attack(args) -> dict:
    config = ui.UserInferenceConfig(
        model=args.model, reference=args.reference, data=args.data, bootstrap=args.bootstrap,
        knowledge_draws=args.draws, calibration_fpr=args.calibration_fpr, seed=args.seed,
        batch_size=args.batch_size)
    result = dataclasses.asdict(ui.run(config))
    if not args.samples:
        result.pop("samples")
    return result


def _canaries(args) -> dict:
    out = Path(args.out)
    fmt = {".csv": "csv", ".jsonl": "jsonl"}.get(out.suffix.lower())
    if fmt is None:
        raise UserError("--out must end in .csv or .jsonl")
    users = [u.strip() for u in args.users.split(",") if u.strip()]
    records, canaries = ui.build_canary_users(ui.load_samples(args.data), words=args.words,
                                              count=args.count, user_ids=users or None, seed=args.seed)
    out.write_text(ui.write_samples(records, fmt), encoding="utf-8")
    return {"out": str(out), "samples": len(records), "canaries": canaries}


def _mitigate(args) -> whatif.WhatIfResult:
    return _without_samples(whatif.run_mitigation(whatif.MitigationConfig(
        dedup=not args.no_dedup, dedup_words=args.dedup_words, per_user_limit=args.per_user_limit,
        bootstrap=args.bootstrap, seed=args.seed)))


def _canary_retrain(args) -> whatif.WhatIfResult:
    return _without_samples(whatif.run_canary_retrain(whatif.CanaryRetrainConfig(
        words=args.words, per_side=args.per_side, bootstrap=args.bootstrap, seed=args.seed)))


def _without_samples(result: whatif.WhatIfResult) -> whatif.WhatIfResult:
    """The per-sample scores are left out of what-if output (the per-user rows stay)."""
    for side in (result.baseline, result.attacked):
        side.samples = []
    return result
