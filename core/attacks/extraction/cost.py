"""What an extraction run costs before Run (``core.cost``): generation under the target
for each strategy, its samples scored under the target, their lowercase and the reference."""

from __future__ import annotations

from core.calibration.cost import calibrated
from core.cost.plan import Plan, generated_texts, generation, load, reading, sample_length, scoring
from core.cost.sizes import model_size


def extraction(config) -> Plan:
    target = model_size(config.model)
    plan = Plan([load(target)])
    reference = None
    if config.reference:
        reference, domain = calibrated(config.reference, config.domain_sample,
                                       config.domain_steps, config.device)
        plan.add(domain).works.append(load(reference))
    room = min(config.tokens, target.context - 1)
    mean, notes = sample_length(config.corpus or config.prefixes, target, room)
    plan.assumptions += notes
    files = (config.corpus, config.prefixes if "prefix" in config.strategies else "")
    plan.works += [reading(f) for f in dict.fromkeys(files) if f.strip()]   # index, prompts
    prompt = (config.prefix_min_tokens + config.prefix_max_tokens) / 2
    for strategy in config.strategies:
        first = prompt if strategy == "prefix" else 0
        plan.works.append(generation(target, config.n_samples, room, config.batch_size, first,
                                     mean))
        samples = generated_texts(config.n_samples, first + mean)
        plan.works.append(scoring(target, samples, f"{strategy} samples and their lowercase", 2))
        if reference is not None:
            plan.works.append(scoring(reference, samples, f"{strategy} samples"))
    return plan
