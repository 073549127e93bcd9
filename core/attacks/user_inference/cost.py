"""What user inference costs before Run (``core.cost``): every user sample scored under the
target and the reference, then the bootstrap over users."""

from __future__ import annotations

from core.calibration.cost import calibrated
from core.cost.plan import Plan, bootstrap, load, scoring, token_note
from core.cost.sizes import check_renderable, model_size, text_stats


def user_inference(config) -> Plan:
    from core.attacks.user_inference.samples import load_samples

    target = model_size(config.model)
    reference, plan = calibrated(config.reference, config.domain_sample, config.domain_steps,
                                 config.device)
    samples = load_samples(config.data)
    check_renderable(config.data, target, config.chat_template)
    users = len({s.user_id for s in samples})
    texts = text_stats([s.text for s in samples], target,
                       window=min(target.context, reference.context, 1024))
    plan.works += [load(target), load(reference), scoring(target, texts, f"{texts.count:,} "
                   "samples"), scoring(reference, texts, f"{texts.count:,} samples"),
                   bootstrap(config.bootstrap, users, 2)]
    return plan.add(Plan(assumptions=token_note(texts)))
