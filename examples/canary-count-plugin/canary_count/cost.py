"""What a run costs before Run (``core.cost``): the corpus read, the model loaded, two texts
scored."""

from __future__ import annotations


def plan(config):
    from core.cost.plan import Plan, load, reading, scoring
    from core.cost.sizes import model_size, text_stats

    works = [reading(config.corpus)]
    if config.model:
        size = model_size(config.model)
        works += [load(size), scoring(size, text_stats([config.canary] * 2, size),
                                      "the canary and its shuffle")]
    return Plan(works)
