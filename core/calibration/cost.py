"""What the domain reference costs before Run (``core.cost``), and the reference an attack
compares with: its training counted unless it is cached."""

from __future__ import annotations

from dataclasses import replace

from core import paths
from core.cost.plan import Plan, load, scoring, token_note
from core.cost.sizes import ModelSize, model_size, text_stats
from core.cost.training import batch_length, lora_weights, training
from core.readers.data import read_texts


def calibrated(reference: str, sample: str, steps: int, device: str) -> tuple[ModelSize, Plan]:
    """The reference model an attack compares with (its domain reference when a public sample
    is given) and the work of training that reference, unless it is cached."""
    size = model_size(reference)
    if not sample.strip():
        return size, Plan()
    plan = domain_reference_plan(reference, sample, steps=steps, device=device)
    return replace(size, loaded=False), plan


def domain_reference_plan(base: str, sample: str, **settings) -> Plan:
    """Training the domain reference of ``base`` on ``sample``; nothing when it is cached."""
    from core.calibration import reference as spec   # the spec's module imports this one

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
