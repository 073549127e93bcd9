"""What inextractability costs before Run (``core.cost``): one scoring pass of its texts."""

from __future__ import annotations

from core.cost.plan import Plan, load, scoring, token_note
from core.cost.sizes import check_renderable, model_size, text_stats


def inextractability(config) -> Plan:
    from core.attacks.inextractability.spec import measured_texts

    size = model_size(config.model)
    texts = text_stats(measured_texts(config) + [p + s for p, s in config.pairs], size)
    check_renderable(config.corpus, size, config.chat_template)
    return Plan([load(size), scoring(size, texts, f"{texts.count:,} texts and pairs")],
                token_note(texts))
