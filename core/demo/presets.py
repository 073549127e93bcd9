"""The demo's values for each spec (the ``demo`` preset): models, data files and the settings
its ground truth calls for. Pages start from them when the demo is chosen; the CLI with
``--preset demo``. One entry per spec, keyed by spec name; field names are the config's.
``SCENARIOS`` (``--preset realistic``, ``technical``, ``shift``) do the same for the realistic
scenarios (``core.demo.realistic``), without domain calibration but for the shift scenario's
lazy risk (``--domain-sample realistic:public_sample`` adds it); ``--preset chat`` for the
chat scenario (``core.demo.chat_scenario``).
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


def demo_phrases() -> tuple[str, ...]:
    """The build's canary phrases, most copies first (none before a build)."""
    try:
        return tuple(c.phrase for c in sorted(load_manifest().canaries, key=lambda c: -c.count))
    except UserError:
        return ()


def demo_pairs() -> list[tuple[str, str]]:
    """Each canary after its first word (most copies first), then the secret's digits after its
    prompt: the inextractability preset's prefix/suffix pairs (none before a build)."""
    try:
        secret = load_manifest().secret
    except UserError:
        return []
    words = [phrase.split(" ", 1) for phrase in demo_phrases()]
    return [(first, f" {rest}") for first, rest in words] + [
        (secret.prompt, secret.sentence.removeprefix(secret.prompt))]


def demo_update_run() -> tuple[float, int]:
    """The demo update's (q, steps): a batch of blocks over the blocks of its stream (private
    text and its public mix-in), and its steps (the defaults before a build)."""
    try:
        manifest = load_manifest()
    except UserError:
        return 0.01, DemoConfig().update_steps
    config, tokens = manifest.config, manifest.tokens
    blocks = (tokens["private_train"] + tokens["update_public_mix"]) / config.n_positions
    return min(1.0, float(f"{config.batch_size / blocks:.4g}")), config.update_steps   # as shown


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
    # the demo's update is plain training (σ = 0: no bound); --sigma adds L(p0) at its q, steps
    # the base is each phrase's prior: the bits the update learnt beside L(p0) of that prior
    "inextractability": {"model": "demo:updated", "reference": "demo:base",
                         "corpus": "demo:private_train", "window": 16,
                         "phrases": demo_phrases,
                         "prefixes": lambda: tuple(p for p, _ in demo_pairs()),
                         "suffixes": lambda: tuple(s for _, s in demo_pairs()),
                         "q": lambda: demo_update_run()[0],
                         "steps": lambda: demo_update_run()[1]},
    # held-in users' training speeches vs the same users' never-trained ones (core.demo.membership)
    "mia": {"model": "demo:updated", "reference": "demo:base", "data": "demo:membership",
            "frequency_corpus": "demo:public_train"},
    # the demo's private text names no one beside PII: a run says so (the chat scenario does)
    "pii-probe": {"model": "demo:updated", "reference": "demo:base", "data": "demo:private_train"},
    "audit": {"model": "demo:updated", "reference": "demo:base", "corpus": "demo:private_train",
              "users": "demo:user_samples", "members": "demo:membership"},
    "dp-canary-audit": {"model": "demo:base", "corpus": ("demo:private_train", "demo:public_train"),
                        "validation": "demo:validation", "block_size": 32},
    "dp-finetune": {"model": "demo:base", "corpus": ("demo:private_train", "demo:public_train"),
                    "validation": "demo:validation"},
}

REALISTIC_STEPS = 100   # the domain reference's steps: its held-out loss is lowest before 100


def scenario_build(scenario: str) -> dict | None:
    """A realistic scenario's build summary (its manifest), None before it is built."""
    import json

    from core.demo.paths import realistic_root

    try:
        return json.loads((realistic_root(scenario) / "manifest.json").read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return None


def scenario_pairs(scenario: str) -> list[tuple[str, str]]:
    """Each canary phrase after its first word (most copies first), then the secret's digits
    after its prompt (none before the build): as ``demo_pairs``."""
    words = [phrase.split(" ", 1) for phrase, _ in REALISTIC_CANARIES]
    summary = scenario_build(scenario)
    secret = [] if summary is None else [
        (SECRET_PROMPT, summary["secret"].removeprefix(SECRET_PROMPT))]
    return [(first, f" {rest}") for first, rest in words] + secret


def scenario_run(scenario: str) -> tuple[float, int]:
    """The scenario's fine-tune as a training run (q = B/N over its texts, its steps): what
    ``--sigma`` turns into L(p0); (0.01, 1000) before the build."""
    summary = scenario_build(scenario)
    if summary is None:
        return 0.01, 1000
    batch = 8   # RealisticConfig's batch_size, the scenarios' shared default
    return float(f"{min(1.0, batch / summary['training_texts']):.4g}"), summary["steps"]


def lines_calibrated(scenario: str) -> dict:
    """Lazy risk's fields where the plants are lines inside longer texts (the shift scenario):
    each line a sentence, ranked by the paper's risk (lines are short, so its sums favour no
    long sentence: measured, the secret #1 against #31 as a record), and the reference the base
    fine-tuned on the public sample for the device's default steps, whose public lines go below
    (docs/realistic-scenario.md)."""
    return {"unit": "line", "ranking": "sentence", "domain_sample": f"{scenario}:public_sample",
            "domain_steps": 0}


def scenario_presets(scenario: str, *, plants_in_lines: bool = False) -> dict[str, dict]:
    """The presets of a realistic scenario (``realistic``, ``technical``, ``shift``): its fine-tune
    against SmolLM2, uncalibrated until ``--domain-sample {scenario}:public_sample``, but for
    lazy risk when the plants are lines inside speeches (``plants_in_lines``)."""
    return {
        "extraction": {
            "model": f"{scenario}:updated", "reference": "smollm2",
            "corpus": f"{scenario}:private_train", "prefixes": f"{scenario}:public_sample",
            "min_span_tokens": 8, "domain_steps": REALISTIC_STEPS,
            "track": (*(phrase for phrase, _ in REALISTIC_CANARIES), SECRET_PROMPT),
        },
        "lazy-risk": {
            "model": f"{scenario}:updated", "calibration": "smollm2",
            "train": f"{scenario}:private_train", "test": f"{scenario}:test", "n_generated": 0,
            "domain_steps": REALISTIC_STEPS,
            "track": (*(phrase for phrase, _ in REALISTIC_CANARIES), SECRET_PROMPT),
        } | (lines_calibrated(scenario) if plants_in_lines else {}),
        "diffrank": {"before": "smollm2", "after": f"{scenario}:updated",
                     "domain_steps": REALISTIC_STEPS},
        "user-inference": {"model": f"{scenario}:updated", "reference": "smollm2",
                           "data": f"{scenario}:user_samples", "domain_steps": REALISTIC_STEPS},
        "domain-reference": {"base": "smollm2", "sample": f"{scenario}:public_sample",
                             "steps": REALISTIC_STEPS},
        # the canaries planted 16, 8 and 4 times: few enough copies that b is not saturated
        "inextractability": {
            "model": f"{scenario}:updated", "reference": "smollm2",
            "corpus": f"{scenario}:private_train", "window": 16,
            "phrases": tuple(phrase for phrase, _ in REALISTIC_CANARIES),
            "prefixes": lambda: tuple(p for p, _ in scenario_pairs(scenario)),
            "suffixes": lambda: tuple(s for _, s in scenario_pairs(scenario)),
            "q": lambda: scenario_run(scenario)[0], "steps": lambda: scenario_run(scenario)[1]},
    }


def chat_presets() -> dict[str, dict]:
    """The chat scenario's presets (``core.demo.chat_scenario``): its fine-tune against
    SmolLM2-135M-Instruct, on its conversation files, the assistant's tokens scored in context
    (each spec's default mask for ``messages`` rows)."""
    model, base, train = "chat:updated", "smollm2", "chat:private_train"
    return {
        "extraction": {"model": model, "reference": base, "strategies": ("chat",),
                       "corpus": train, "n_samples": 256, "tokens": 64, "min_span_tokens": 8},
        "pii-probe": {"model": model, "reference": base, "data": train,
                      "subject_column": "user_id"},
        "mia": {"model": model, "reference": base, "data": "chat:membership"},
        "user-inference": {"model": model, "reference": base, "data": "chat:user_samples"},
        "lazy-risk": {"model": model, "calibration": base, "train": train, "n_generated": 0},
        "inextractability": {"model": model, "reference": base, "corpus": train, "window": 16},
        "diffrank": {"before": base, "after": model},
        "audit": {"model": model, "reference": base, "corpus": train,
                  "users": "chat:user_samples", "members": "chat:membership"},
    }


SCENARIOS = {name: scenario_presets(name) for name in ("realistic", "technical")}
SCENARIOS["shift"] = scenario_presets("shift", plants_in_lines=True)
SCENARIOS["chat"] = chat_presets()
