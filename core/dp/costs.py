"""What the DP specs cost before Run (``core.cost``): DP fine-tuning, the canary audit of a
DP run and the natural-identifier audit."""

from __future__ import annotations

from dataclasses import replace

from core.cost.plan import Plan, load, reading, scoring
from core.cost.sizes import ModelSize, Texts, model_size, text_stats
from core.cost.training import training
from core.readers.data import read_texts


DP_SLOWDOWN = 2.0   # DP-SGD's ghost clipping: a second backward pass for the per-example norms


def _dp_trainable(size: ModelSize) -> int:
    """Input embeddings frozen, the head trained (a copy of its own when it was tied)."""
    return size.parameters - size.tables + size.head


def dp_finetune(config) -> Plan:
    size = model_size(config.model)
    plan = Plan([load(size)], ["a σ finished by an earlier run of the same config is reused, "
                               "and counted here all the same"])
    validation = read_texts(config.validation or config.corpus[0])[: config.validation_texts]
    held = text_stats(validation, size, cut=config.block_size)
    for sigma in config.sigmas:
        plan.works += [
            training(size, steps=config.steps, block=config.block_size,
                     batch=config.batch_size * (config.user_samples_per_step
                                                if config.unit == "user" else 1),
                     trainable=_dp_trainable(size), what=f"σ = {sigma:g}",
                     slowdown=DP_SLOWDOWN if sigma > 0 else 1.0),
            scoring(size, held, f"σ = {sigma:g}: {held.count:,} validation texts")]
    return plan


def dp_canary_audit(config) -> Plan:
    size = model_size(config.model)
    if config.kind == "new_tokens":   # m·k rows more in the embeddings and the head (untied)
        added = config.canaries * config.words
        rows = added * size.width
        size = replace(size, vocab=size.vocab + added, parameters=size.parameters + 2 * rows,
                       tables=size.tables + rows, head=size.head + rows)
    canaries = Texts(config.canaries, config.canaries * (config.words + 6),
                     config.canaries * (config.words + 6), (config.words + 6), True)
    return Plan([load(size),
                 scoring(size, canaries, "the canaries under the starting model"),
                 training(size, steps=config.steps, batch=config.batch_size,
                          block=config.block_size, trainable=_dp_trainable(size),
                          what=f"σ = {config.sigma:g}",
                          slowdown=DP_SLOWDOWN if config.sigma > 0 else 1.0),
                 scoring(size, canaries, "the canaries under the trained model")],
                ["a canary is its prefix (about 5 tokens) and its words, one token each"])


def nid_audit(config) -> Plan:
    """The corpus read, then at most one identifier a text and its fresh twin scored after
    their context (a row of a fine-tuner's: the row up to it, about its trained content's
    length), under the target and the reference (``core.dp.nid_audit``)."""
    from core.chat import holds_rows
    from core.dp.nid_formats import NID_TOKENS

    target = model_size(config.model)
    corpus = {source: read_texts(source) for source in config.corpus}
    strings = 2 * min(sum(len(texts) for texts in corpus.values()), config.max_identifiers)
    rows = [text_stats(texts, target).length for source, texts in corpus.items()
            if texts and holds_rows(source)]
    length = max([config.context_tokens, *rows]) + NID_TOKENS
    scored = Texts(strings, strings * length, strings * length, length, True)
    models = [target] + ([model_size(config.reference)] if config.reference.strip() else [])
    plan = Plan([reading(source) for source in config.corpus],
                ["one identifier a text at most (the corpus is not searched before Run)"]
                + (["a row is scored up to its identifier: about its trained content's tokens, "
                    "the template's aside"] if rows else []))
    for size in models:
        plan.works += [load(size), scoring(size, scored, f"{strings:,} identifiers")]
    return plan
