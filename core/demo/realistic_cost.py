"""The cost before Run of a realistic scenario's build (``core.cost``: the spec's ``cost``)."""

from __future__ import annotations

import math
from dataclasses import replace

from core.cost.plan import Plan, load, scoring, token_note
from core.cost.sizes import model_size, text_stats
from core.cost.training import batch_length, lora_weights, training
from core.demo.config import REALISTIC_CANARIES
from core.demo.paths import realistic_root
from core.demo.realistic import cached_build, loss_texts, public_texts, scenario_split


def scenario_build(config) -> Plan:
    """A realistic scenario's build (``core.demo.realistic``): the plants scored before and
    after, ⌈epochs · N / B⌉ steps on the N private training texts; nothing when it is built."""
    root = realistic_root(config.scenario)
    if not config.force and cached_build(root, config) is not None:
        return Plan(assumptions=[f"the {config.scenario} scenario of this config is built: "
                                 "not trained again"])
    size = model_size(config.base)
    split = scenario_split(config)
    texts = [record["text"] for record in split.private_train]
    steps = math.ceil(config.epochs * len(texts) / config.batch_size)
    block, measured = batch_length(texts, size, config.max_tokens, config.batch_size)
    lora = config.lora_rank > 0
    plants = text_stats([split.secret, *(p for p, _ in REALISTIC_CANARIES)], size)
    heldout = text_stats([t for texts in loss_texts(split, public_texts(split, config)).values()
                          for t in texts], size)
    works = [load(replace(size, loaded=False)),
             scoring(size, plants, "the plants before the fine-tune"),
             scoring(size, heldout, "the held-out loss before"),
             training(size, steps=steps, batch=config.batch_size, block=block,
                      trainable=lora_weights(size, config.lora_rank) if lora else size.parameters,
                      backward=1.0 if lora else 2.0,
                      what=f"{config.scenario} fine-tune ({'LoRA' if lora else 'all weights'})"),
             scoring(size, plants, "the plants after the fine-tune"),
             scoring(size, heldout, "the held-out loss after")]
    return Plan(works, [] if measured else token_note(plants))


def chat_build(config, records: list[dict]) -> Plan:
    """The chat scenario's build (``core.demo.chat_scenario``): ⌈epochs · N / B⌉ steps on its N
    rendered rows, each subject's reply scored before and after; nothing when it is built."""
    from core.demo.chat_rows import SUPPORT_SYSTEM
    from core.demo.chat_scenario import cached_build as chat_cached
    from core.readers.rows import plain_texts

    if not config.force and chat_cached(realistic_root("chat"), config) is not None:
        return Plan(assumptions=["the chat scenario of this config is built: not trained again"])
    size = model_size(config.base)
    texts = [text for _, text in plain_texts(records, "messages")]
    steps = math.ceil(config.epochs * len(texts) / config.batch_size)
    block, measured = batch_length(texts, size, config.max_tokens, config.batch_size)
    lora = config.lora_rank > 0
    subjects = config.subjects_per_dose * len(config.doses) + config.held_out_subjects
    support = [t for r, t in zip(records, texts) if r["messages"][0]["content"] == SUPPORT_SYSTEM]
    replies = text_stats(support[:subjects], size)
    works = [load(replace(size, loaded=False)), scoring(size, replies, "replies before"),
             training(size, steps=steps, batch=config.batch_size, block=block,
                      trainable=lora_weights(size, config.lora_rank) if lora else size.parameters,
                      backward=1.0 if lora else 2.0,
                      what=f"chat fine-tune ({'LoRA' if lora else 'all weights'}, assistant "
                           "tokens only)"),
             scoring(size, replies, "replies after")]
    return Plan(works, ["rows counted without the chat template's tokens",
                        *([] if measured else token_note(replies))])
