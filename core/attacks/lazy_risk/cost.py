"""What lazy-sampling risk costs before Run (``core.cost``)."""

from __future__ import annotations

from core.calibration.cost import calibrated
from core.cost.plan import (Plan, generated_texts, generation, load, sample_length, scoring,
                            token_note)
from core.cost.sizes import check_renderable, model_size, text_stats
from core.attacks.lazy_risk.config import plain_units
from core.readers.data import read_texts


def lazy_risk(config) -> Plan:
    target = model_size(config.model)
    calibration, plan = calibrated(config.calibration, config.domain_sample,
                                   config.domain_steps, config.device)
    plan.works += [load(target), load(calibration)]
    sets = {"train": config.train} | ({"test": config.test} if config.test.strip() else {})
    for name, source in sets.items():
        unique = list(dict.fromkeys(plain_units(read_texts(source), config.unit)))
        check_renderable(source, target, config.chat_template)
        unique = unique[: config.max_sentences]
        texts = text_stats(unique, target)
        plan.works += [scoring(target, texts, f"{texts.count:,} {name} sentences"),
                       scoring(calibration, texts, f"{texts.count:,} {name} sentences")]
        plan.assumptions += token_note(texts)
    if config.n_generated:
        room = min(config.generated_tokens, target.context - 1)
        mean, notes = sample_length(config.train, target, room)
        samples = generated_texts(config.n_generated, mean)
        plan.works += [generation(target, config.n_generated, room, config.batch_size, 0, mean),
                       scoring(target, samples, "the generated sentences"),
                       scoring(calibration, samples, "the generated sentences")]
        plan.assumptions += notes
    return plan
