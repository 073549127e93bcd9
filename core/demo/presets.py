"""The demo's values for each spec (the ``demo`` preset): models, data files and the settings
its ground truth calls for. Pages start from them when the demo is chosen; the CLI with
``--preset demo``. One entry per spec, keyed by spec name; field names are the config's.
``REALISTIC`` (``--preset realistic``) does the same for the realistic scenario
(``core.demo.realistic``), without domain calibration: ``--domain-sample
realistic:public_sample`` adds it.
"""

from core.demo.config import REALISTIC_CANARIES, SECRET_PROMPT, DemoConfig
from core.demo.paths import load_manifest
from core.errors import UserError


def demo_planted() -> tuple[str, ...]:
    """The demo build's planted secret sentence and its canaries (extraction tracks them); the
    canaries alone before a build."""
    canaries = tuple(phrase for phrase, _ in DemoConfig().canaries)
    try:
        return (load_manifest().secret.sentence, *canaries)
    except UserError:
        return canaries


def demo_secret_digits() -> tuple[str, ...]:
    """The demo build's secret digits (the exposure preset's secret); none before a build."""
    try:
        return (load_manifest().secret.digits,)
    except UserError:
        return ()


PRESETS: dict[str, dict] = {
    "extraction": {
        "model": "demo:updated", "reference": "demo:base", "corpus": "demo:private_train",
        "prefixes": "demo:public_train", "strategies": ("top-n", "temperature", "prefix"),
        # The planted sentences are 15-32 tokens long, so a 50-token verbatim span can never
        # match them; 8 tokens of private text in a row is already far beyond chance here.
        "min_span_tokens": 8,
        "track": demo_planted,   # where the planted secret and canaries turn up
    },
    "lazy-risk": {
        "model": "demo:updated", "calibration": "demo:base", "train": "demo:private_train",
        "test": "demo:user_samples",
        # the planted canaries, and the secret by its prompt (its digits depend on the seed)
        "track": (*(phrase for phrase, _ in DemoConfig().canaries), SECRET_PROMPT),
    },
    "diffrank": {
        "before": "demo:base", "after": "demo:updated",
        # the demo's first canary: the update inserted it, so it ranks at the top
        "phrase": "Zealous penguins quietly juggle turquoise kettles.",
    },
    "user-inference": {
        "model": "demo:updated", "reference": "demo:base", "data": "demo:user_samples",
    },
    "user-inference-canaries": {"data": "demo:user_samples"},
    # the planted secret's digits come from the build (core.demo.sources)
    "exposure": {"model": "demo:updated", "template": f"{SECRET_PROMPT} {{secret}}.",
                 "secrets": demo_secret_digits},
    # held-in users' training speeches vs the same users' never-trained ones (core.demo.membership)
    "mia": {"model": "demo:updated", "reference": "demo:base", "data": "demo:membership",
            "frequency_corpus": "demo:public_train"},
    "audit": {"model": "demo:updated", "reference": "demo:base", "corpus": "demo:private_train",
              "users": "demo:user_samples", "members": "demo:membership"},
    "dp-canary-audit": {"model": "demo:base", "corpus": ("demo:private_train", "demo:public_train"),
                        "validation": "demo:validation", "block_size": 32},
    "dp-finetune": {"model": "demo:base", "corpus": ("demo:private_train", "demo:public_train"),
                    "validation": "demo:validation"},
}

REALISTIC_STEPS = 100   # the domain reference's steps: its held-out loss is lowest before 100
REALISTIC: dict[str, dict] = {
    "extraction": {
        "model": "realistic:updated", "reference": "smollm2", "corpus": "realistic:private_train",
        "prefixes": "realistic:public_sample", "min_span_tokens": 8,
        "domain_steps": REALISTIC_STEPS,
        "track": (*(phrase for phrase, _ in REALISTIC_CANARIES), SECRET_PROMPT),
    },
    "lazy-risk": {
        "model": "realistic:updated", "calibration": "smollm2", "train": "realistic:private_train",
        "test": "realistic:test", "n_generated": 0, "domain_steps": REALISTIC_STEPS,
        "track": (*(phrase for phrase, _ in REALISTIC_CANARIES), SECRET_PROMPT),
    },
    "diffrank": {"before": "smollm2", "after": "realistic:updated",
                 "domain_steps": REALISTIC_STEPS},
    "user-inference": {"model": "realistic:updated", "reference": "smollm2",
                       "data": "realistic:user_samples", "domain_steps": REALISTIC_STEPS},
    "domain-reference": {"base": "smollm2", "sample": "realistic:public_sample",
                         "steps": REALISTIC_STEPS},
}
