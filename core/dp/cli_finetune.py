"""`python -m core dp-finetune ...`: DP fine-tuning with a secret canary (Stock et al. 2022, §4.3).

Every field of ``DPFinetuneConfig`` is an option (``--canary-repeats 200`` sets
``canary_repeats``). Progress goes to stderr; running the same command again resumes from the
last checkpoint.
"""

from __future__ import annotations

import dataclasses
import sys

from core.dp.finetune import DPFinetuneConfig, run


def register(sub) -> None:
    parser = sub.add_parser(
        "dp-finetune",
        help="fine-tune an LM with DP-SGD on a corpus with a credit-card canary; secrecy vs the bound",
        description="Secrecy log2(1/p1) of a 16-digit secret given its prompt over training steps, "
                    "for each sigma (0 = no DP), against the prior and the bound's allowed leakage. "
                    "Resumes from checkpoints when run again with the same options.",
    )
    for field in dataclasses.fields(DPFinetuneConfig):
        parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name,
                            type=type(field.default), default=field.default,
                            help=f"default {field.default}")
    parser.set_defaults(func=_dp_finetune)


def _report(fraction: float, message: str = "", partial=None) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


def _dp_finetune(args):
    names = [field.name for field in dataclasses.fields(DPFinetuneConfig)]
    config = DPFinetuneConfig(**{name: getattr(args, name) for name in names})
    return run(config, progress=_report)
