"""What a PII probe costs before Run (``core.cost``)."""

from __future__ import annotations

from dataclasses import replace

from core.cost.plan import Plan, generation, load, scoring, token_note
from core.cost.sizes import model_size, text_stats
from core.cost.work import Work


def pii_probe(config) -> Plan:
    """The probes' k samples each under the target, then every probe's true and fresh values
    scored after its prompt under the target and the reference (``core.attacks.pii_probe``)."""
    from core.attacks.pii_probe.probes import build_probes, prompt_text
    from core.attacks.pii_probe.subjects import subjects_of
    from core.errors import NotApplicable

    target = model_size(config.model)
    try:
        subjects, rows, _ = subjects_of(config)
    except NotApplicable as err:
        return Plan(assumptions=[f"not run: {err}"])
    probes = build_probes(subjects, config.probes)
    prompts = text_stats([prompt_text(p) + " " + p.value for p in probes], target)
    prompt = prompts.tokens / max(prompts.count, 1)
    samples = len(probes) * config.samples
    values = 1 + config.fresh
    scored = replace(prompts, count=prompts.count * values, tokens=prompts.tokens * values,
                     forward=prompts.forward * values)
    models = [target] + ([model_size(config.reference)] if config.reference.strip() else [])
    plan = Plan([Work("text", f"find the PII of {rows:,} rows", sequences=rows), load(target),
                 generation(target, samples, config.tokens, config.batch_size, prompt)],
                ["replies run to the most tokens allowed (an upper bound when they end early)",
                 "prompts counted without the chat template's tokens", *token_note(prompts)])
    for size in models:
        plan.works += ([load(size)] if size is not target else []) + [
            scoring(size, scored, f"{len(probes):,} true and {len(probes) * config.fresh:,} "
                    "fresh values")]
    return plan
