"""Which attacks an audit runs, each one's config, and its verdict in plain words.

An attack runs when the audit has what it needs (``Step.needs``). Its config is the attack's
own defaults, then its preset's settings (``core.sources``) when the audit's reference and files
are that preset's (the demo's settings for the demo's data: e.g. 8-token verification spans for
its short planted sentences), then the audit's models, files and seed.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, NamedTuple

from core import sources
from core.cli_input import read_value
from core.errors import UserError
from core.registry import get_spec


VERDICT_SPANS = 5   # the longest memorised spans an extraction verdict names


class Step(NamedTuple):
    needs: tuple[str, ...]              # audit fields that must be given
    fields: dict[str, str]              # the attack's config field -> the audit field it takes
    verdict: Callable[[Any], str]       # the result in plain words


def _extraction(result) -> str:
    found = sorted((c for c in result.candidates if c.memorized),
                   key=lambda c: (-c.span_tokens, -c.k_eidetic))
    if not result.corpus:
        return (f"{sum(result.generated.values()):,} samples generated and ranked; with no "
                "training corpus given nothing could be verified as memorised.")
    if not found:
        return (f"No verbatim training text found among {len(result.candidates):,} ranked "
                f"candidates (spans of at least {result.min_span_tokens} tokens).")
    spans: dict[str, Any] = {}
    for candidate in found:   # the longest spans, none a part of one already kept
        span = candidate.span.strip()
        if not any(span in kept for kept in spans):
            spans[span] = candidate
    shown = "; ".join(f"“{span}” ({c.span_tokens} tokens, in {c.k_eidetic} training "
                      f"document{'s' if c.k_eidetic != 1 else ''})"
                      for span, c in list(spans.items())[:VERDICT_SPANS])
    return (f"{len(found)} extracted candidates hold verbatim training text: {len(spans)} "
            f"distinct passages were extracted verbatim and are memorised. The longest: {shown}.")


def _diffrank(result) -> str:
    top = "; ".join(f"“{r.phrase}”" for r in result.rows[:10])
    phrase = result.phrase
    typed = (f" The phrase “{phrase.text}”: {phrase.rank} searched sequences score higher."
             if phrase is not None and phrase.rank is not None else "")
    return (f"The {len(result.rows)} sequences the update raised most ({result.metric.upper()}), "
            f"the first ten: {top}.{typed}")


def _user_inference(result) -> str:
    if result.auroc is None:
        return f"{result.n_users} users ranked by T̂; no member labels, so no AUROC."
    ci = f" (95% CI {result.auroc_ci[0]:.3f}–{result.auroc_ci[1]:.3f})" if result.auroc_ci else ""
    return (f"User inference tells held-in from held-out users with AUROC {result.auroc:.3f}"
            f"{ci} over {result.n_users} users; TPR {result.tpr_at_1pct_fpr:.2f} at 1% FPR.")


def _mia(result) -> str:
    best = result.best()
    bounds = best.metrics.auroc_ci   # empty without bootstrap
    ci = f" (95% CI {bounds[0]:.3f}–{bounds[1]:.3f})" if bounds else ""
    warning = " The blind baseline does as well: the split leaks." if result.warning else ""
    return (f"Best membership attack: {best.title}, AUROC {best.metrics.auroc:.3f}"
            f"{ci} on {result.n_members} members and "
            f"{result.n_non_members} non-members; blind baseline {result.blind.auroc:.3f}."
            f"{warning}")


def _lazy_risk(result) -> str:
    train = [x for x in result.sentences if x.set == "train"]
    if not train:
        return "No training sentence was scored."
    top = train[0]
    chance = ("never generated" if top.log10_probability is None
              else f"generated with probability 10^{top.log10_probability:.1f}")
    return (f"Of {len(train):,} training sentences the most at risk is “{top.text[:120]}” "
            f"({chance} by the sampler; calibrated loss {top.calibrated_loss:.2f} nats).")


STEPS: dict[str, Step] = {
    "extraction": Step(("model",), {"model": "model", "reference": "reference",
                                    "corpus": "corpus"}, _extraction),
    "diffrank": Step(("model", "reference"), {"after": "model", "before": "reference"},
                     _diffrank),
    "user-inference": Step(("model", "reference", "users"),
                           {"model": "model", "reference": "reference", "data": "users"},
                           _user_inference),
    "mia": Step(("model", "members"), {"model": "model", "reference": "reference",
                                       "data": "members"}, _mia),
    "lazy-risk": Step(("model", "reference", "corpus"),
                      {"model": "model", "calibration": "reference", "train": "corpus"},
                      _lazy_risk),
}


def available(audit) -> list[str]:
    """The attacks whose inputs the audit has, in the report's order."""
    return [name for name, step in STEPS.items()
            if all(str(getattr(audit, f)).strip() for f in step.needs)]


DATA_INPUTS = ("corpus", "users", "members")   # the audit's files, each read by some attacks


def unused_inputs(audit) -> list[str]:
    """A note naming the files given to ``audit`` (an audit or a series) that none of its chosen
    attacks reads, e.g. ``["not used: users (no chosen attack reads it)"]``; [] if none."""
    read = {source for name in audit.chosen() for source in STEPS[name].fields.values()}
    unused = [f for f in DATA_INPUTS if str(getattr(audit, f)).strip() and f not in read]
    if not unused:
        return []
    return [f"not used: {', '.join(unused)} (no chosen attack reads "
            f"{'it' if len(unused) == 1 else 'them'})"]


def _preset_for(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """The settings of the attack's preset whose reference and files agree with ``values`` ({}
    if none): they suit the data, whichever model was trained on it (e.g. a LoRA adapter fine-
    tuned on the demo's data). The preset's models and files are never added."""
    compared = {k: v for k, v in values.items() if STEPS[name].fields[k] != "model"}
    for preset in sources.preset_names(name):
        chosen = sources.preset(name, preset)
        if compared and all(chosen.get(k) == v for k, v in compared.items()):
            return {k: v for k, v in chosen.items() if k not in STEPS[name].fields}
    return {}


def parse_settings(settings: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``("extraction.n_samples=300", ...)`` -> ``{"extraction": {"n_samples": "300"}}``; a
    ``UserError`` for a setting of no known attack or no such field."""
    parsed: dict[str, dict[str, str]] = {}
    for setting in settings:
        target, equals, value = setting.partition("=")
        attack, dot, field = target.strip().partition(".")
        if not equals or not dot or attack not in STEPS:
            raise UserError(f"a setting is ATTACK.FIELD=VALUE with ATTACK one of "
                            f"{', '.join(STEPS)}, not {setting!r}")
        if field == "device":
            raise UserError(f"{setting!r}: the audit's device (--device) is every attack's, so "
                            "that none runs elsewhere")
        names = {f.name for f in dataclasses.fields(get_spec(attack).config_type)} - {"device"}
        if field not in names or field in STEPS[attack].fields:
            raise UserError(f"{attack} has no setting {field!r} the audit may change: "
                            f"{', '.join(sorted(names - set(STEPS[attack].fields)))}")
        parsed.setdefault(attack, {})[field] = value
    return parsed


def _typed(spec, settings: dict[str, str]) -> dict[str, Any]:
    hints, typed = typing.get_type_hints(spec.config_type), {}
    for field, text in settings.items():
        try:
            typed[field] = read_value(hints[field], text)
        except (ValueError, TypeError) as err:
            raise UserError(f"{field}: {err}") from None
    return typed


def attack_config(name: str, audit) -> Any:
    """The config of attack ``name`` in ``audit``: defaults, preset, the audit's models, files,
    seed and device (every attack that loads a model has a ``device``), then the audit's
    settings of that attack (``--set ATTACK.FIELD=VALUE``, never the device)."""
    spec = get_spec(name)
    values = {field: getattr(audit, source) for field, source in STEPS[name].fields.items()
              if str(getattr(audit, source)).strip()}
    fields = {f.name for f in dataclasses.fields(spec.config_type)}
    common = {k: v for k, v in (("seed", audit.seed), ("device", audit.device)) if k in fields}
    changed = _typed(spec, parse_settings(audit.settings).get(name, {}))
    return spec.config_type(**_preset_for(name, values) | values | common | changed)
