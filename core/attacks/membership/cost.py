"""What membership inference and exposure cost before Run (``core.cost``)."""

from __future__ import annotations

from core.calibration.cost import calibrated
from core.cost.plan import Plan, bootstrap, load, scoring, token_note
from core.cost.sizes import Texts, check_renderable, model_size, text_stats
from core.cost.work import SCORE_ROWS, Work


BLIND_S = 0.01   # per labelled text: the blind baseline's features and classifier (the demo's
                 # 457 texts: 4.5 s)


def mia(config) -> Plan:
    from core.attacks.membership.data import read_labelled
    from core.attacks.membership.scores import ATTACKS, REWRITING
    from core.readers.rows import plain_texts

    target = model_size(config.model)
    table = read_labelled(config.data, config.mask)
    check_renderable(config.data, target, config.chat_template, rows=table.rendered)
    chosen = [n for n in config.chosen() if not (table.rendered and n in REWRITING)]
    texts = text_stats([text for _, text in plain_texts(table.records, table.kind)], target)
    passes = 1 + ("lowercase" in chosen)
    plan = Plan([load(target), scoring(target, texts, f"{texts.count:,} texts", passes)],
                token_note(texts))
    if any(ATTACKS[name].needs == "reference" for name in chosen):
        reference, calibration = calibrated(config.reference, config.domain_sample,
                                            config.domain_steps, config.device)
        plan.add(calibration)
        plan.works += [load(reference), scoring(reference, texts, f"{texts.count:,} texts")]
    if "recall" in chosen:   # each text after the prefix of known non-members (window-capped)
        prefixed = Texts(texts.count, texts.tokens * (1 + config.recall_shots),
                         texts.forward * (1 + config.recall_shots),
                         texts.length * (1 + config.recall_shots), texts.measured)
        plan.works.append(scoring(target, prefixed, "the texts after ReCaLL's prefix"))
    plan.works += [Work("cpu", f"the blind baseline on {texts.count:,} texts",
                        seconds=texts.count * BLIND_S),
                   bootstrap(config.bootstrap, texts.count, len(chosen) + 1)]
    return plan


def exposure(config) -> Plan:
    from core.attacks.membership.exposure import filler_secrets

    size = model_size(config.model)
    fillers, _ = filler_secrets(config)
    filled = [config.template.replace("{secret}", s) for s in fillers[:SCORE_ROWS]]
    one = text_stats(filled, size)
    count = len(fillers) + len(config.secrets)
    texts = Texts(count, one.tokens / one.count * count, one.forward / one.count * count,
                  one.length, one.measured)
    return Plan([load(size), scoring(size, texts, f"{count:,} canaries and fillers")],
                token_note(texts))
