"""What differential rank costs before Run (``core.cost``): the beam search's decoding steps
under both models, the windows' texts scored under both, a phrase's enumeration."""

from __future__ import annotations

from core.calibration.cost import calibrated
from core.cost.plan import UPPER_BOUND, Plan, generated_texts, generation, load, scoring, token_note
from core.cost.sizes import ModelSize, check_renderable, model_size, text_stats
from core.cost.work import SCORE_ROWS, Work
from core.readers.data import read_texts


def _phrase_tokens(phrase: str, size: ModelSize) -> int:
    from core.cost.sizes import chars_per_token

    return max(1, round(len(phrase) / chars_per_token([phrase], size)[0]))


def _beam_works(config, models) -> list[Work]:
    """The beam search's steps under each model: the context, then each beam; with
    ``config.seeds``, a second search whose first step reads every seed's context."""
    from core.attacks.diffrank.search import widths
    from core.attacks.diffrank.seeds import SEED_TOKENS

    size, floor = -(-config.beam // config.groups), -(-config.rows // config.groups)
    later = config.groups * sum(widths(size, config.length, floor)[:-1])
    searches = [("", 1, 0)] + ([("seeded ", config.seeds, SEED_TOKENS)] if config.seeds else [])
    return [Work("generate", f"{name}beam search: {starts + later:,} sequences extended by "
                 f"every token under {model.source}", model,
                 tokens=starts * (1 + seed_tokens) + later, calls=config.groups * config.length,
                 rows=(starts + later) / config.length, length=seed_tokens + config.length / 2)
            for name, starts, seed_tokens in searches for model in models]


def diffrank(config) -> Plan:
    before, plan = calibrated(config.before, config.domain_sample, config.domain_steps,
                              config.device)
    after = model_size(config.after)
    plan.works += [load(before), load(after)]
    models = (before, after)
    if config.strategy != "windows":
        plan.works += _beam_works(config, models)
    if config.strategy != "beam" or config.seeds:
        if config.sample.strip():
            texts = text_stats(read_texts(config.sample), after)
            check_renderable(config.sample, after, config.chat_template)
            plan.assumptions += token_note(texts)
        else:
            room = min(config.sample_tokens, after.context - 1)
            plan.works.append(generation(after, config.sample_texts, room, 64))
            texts = generated_texts(config.sample_texts, room)
            plan.assumptions.append(UPPER_BOUND)
        if config.strategy != "beam":
            plan.works += [scoring(m, texts, "the windows' texts") for m in models]
    if config.phrase.strip():
        n = _phrase_tokens(config.phrase, after)
        if before.vocab ** n <= config.exhaustive_limit:   # every sequence of its length
            rows = sum(before.vocab ** i for i in range(n))
            plan.works += [Work("generate", f"enumerate all {before.vocab ** n:,} sequences of "
                                f"{n} tokens under {m.source}", m, tokens=rows, calls=n,
                                rows=min(rows, SCORE_ROWS), length=n / 2) for m in models]
    return plan
