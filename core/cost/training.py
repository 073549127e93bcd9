"""The work of the specs that fine-tune a model: the domain reference, DP fine-tuning and the
DP canary audit (``core.cost.work``'s ``train`` items, plus the scoring around them)."""

from __future__ import annotations

from dataclasses import replace

from core import paths
from core.cost.attacks import Plan, load, scoring, token_note
from core.cost.sizes import ModelSize, Texts, chars_per_token, model_size, text_stats
from core.cost.work import Work
from core.data import read_texts

DP_SLOWDOWN = 2.0   # DP-SGD's ghost clipping: a second backward pass for the per-example norms


def lora_weights(size: ModelSize, rank: int) -> int:
    """About the weights LoRA adds on every linear layer but the output (4 attention
    projections and 3 MLP ones a layer)."""
    return size.layers * rank * (8 * size.width + 3 * (size.width + size.inner))


def training(size: ModelSize, *, steps: int, batch: int, block: float, trainable: float,
             what: str, backward: float = 2.0, slowdown: float = 1.0) -> Work:
    """``steps`` optimizer steps on batches of ``batch`` rows of ``block`` tokens."""
    return Work("train", f"{what}: {steps:,} steps x {batch:,} x {block:,.0f} tokens on "
                f"{size.source}", size, tokens=steps * batch * block, calls=steps,
                rows=batch * block, length=block / 2, trainable=trainable, backward=backward,
                slowdown=slowdown)


def batch_length(texts: list[str], size: ModelSize, most: int, batch: int) -> tuple[float, bool]:
    """Tokens of a training batch's rows: padded to the longest of ``batch`` texts (the
    quantile 1 - 1/(batch+1) of their lengths), at most ``most`` + the context token."""
    ratio, measured = chars_per_token(texts, size)
    lengths = sorted(min(most, len(t) / ratio) + 1 for t in texts)
    return lengths[min(len(lengths) - 1, int(len(lengths) * batch / (batch + 1)))], measured


def domain_reference_plan(base: str, sample: str, **settings) -> Plan:
    """Training the domain reference of ``base`` on ``sample``; nothing when it is cached."""
    from core.calibration import reference as spec

    config = spec.DomainReferenceConfig(base=base, sample=sample, **settings)
    folder = paths.cache_home() / "models" / "domain" / spec.reference_key(config)
    if not config.force and (folder / spec.RESULT_FILE).is_file():
        return Plan(assumptions=[f"the domain reference of {base} on this sample is cached: "
                                 "not trained again"])
    size = model_size(spec.base_source(base))
    texts = read_texts(sample)
    train, held = spec.split_sample(texts, config.holdout, config.seed)
    most = min(config.max_tokens, size.context - 1)
    block, measured = batch_length(train, size, most, config.batch_size)
    lora = config.weights == "lora" or (config.weights == "auto"
                                        and size.parameters >= spec.LORA_FROM)
    trainable = lora_weights(size, config.lora_rank) if lora else size.parameters
    held_stats = text_stats(held, size, cut=most + 1)
    evaluations = config.steps // config.eval_every + 2
    works = [load(replace(size, loaded=False)),   # a fresh copy, never the shared loaded one
             training(size, steps=config.steps, batch=config.batch_size, block=block,
                      trainable=trainable, backward=1.0 if lora else 2.0,
                      what=f"domain reference ({'LoRA' if lora else 'all weights'})"),
             scoring(size, held_stats, f"{len(held):,} held-out texts, {evaluations} times",
                     evaluations)]
    return Plan(works, [] if measured else token_note(held_stats))


def domain_reference(config) -> Plan:
    return domain_reference_plan(config.base, config.sample, steps=config.steps, lr=config.lr,
                                 batch_size=config.batch_size, max_tokens=config.max_tokens,
                                 holdout=config.holdout, eval_every=config.eval_every,
                                 weights=config.weights, lora_rank=config.lora_rank,
                                 seed=config.seed, device=config.device, force=config.force)


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
