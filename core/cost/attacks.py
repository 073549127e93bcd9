"""The work of each attack that loads language models, from its config (``core.cost.work``).

Each function takes the spec's config and returns a ``Plan``: the ``Work`` items and the
assumptions behind their sizes. Nothing here loads a weight: models are sized from their
configs, texts read and a sample of them tokenised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from core.cost.sizes import ModelSize, Texts, model_size, text_stats
from core.cost.work import SCORE_ROWS, Work
from core.data import read_texts

BOOTSTRAP_S = 8e-8        # per resample and text: one vectorised AUROC (bench.bench_membership_eval)
UPPER_BOUND = ("samples run to the most tokens allowed (no corpus to tell their length): an "
               "upper bound when they end early")


@dataclass
class Plan:
    works: list[Work] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def add(self, other: Plan) -> Plan:
        self.works += other.works
        self.assumptions += [a for a in other.assumptions if a not in self.assumptions]
        return self


def load(size: ModelSize) -> Work:
    return Work("load", f"load {size.source} ({size.parameters:,} parameters)", size)


def scoring(size: ModelSize, texts: Texts, what: str, passes: float = 1) -> Work:
    """``passes`` scoring passes of ``texts`` under ``size``'s model."""
    tokens = texts.forward * passes
    return Work("score", f"score {what}: {tokens:,.0f} tokens under {size.source}", size,
                tokens=tokens, calls=math.ceil(tokens / SCORE_ROWS), rows=min(SCORE_ROWS, tokens),
                length=texts.length / 2, sequences=texts.count * passes)


def generation(size: ModelSize, samples: int, tokens: int, batch: int, prompt: float = 0,
               length: float | None = None) -> Work:
    """``samples`` samples of at most ``tokens`` new tokens (``length`` on average, default all)
    after ``prompt`` tokens, ``batch`` at once: a batch runs until its longest sample ends,
    taken to be ``tokens`` steps."""
    length = tokens if length is None else length
    return Work("generate", f"generate {samples:,} samples x {length:,.0f} tokens (at most "
                f"{tokens:,}) with {size.source}", size, tokens=samples * length,
                calls=math.ceil(samples / batch) * tokens, rows=min(batch, samples),
                length=prompt + length / 2)


def sample_length(documents: str, size: ModelSize, room: int) -> tuple[float, list[str]]:
    """Mean new tokens of a sample and the assumption made: as long as the documents the model
    was trained on (a file of them, e.g. its training corpus) with their end-of-text, at most
    ``room``; ``room`` without such a file (an upper bound)."""
    if not documents.strip():
        return room, [UPPER_BOUND]
    texts = text_stats(read_texts(documents), size)
    mean = min(room, texts.tokens / max(texts.count, 1))
    return mean, [f"samples as long as the documents of {documents} ({mean:.0f} tokens on "
                  f"average, at most {room})", *token_note(texts)]


def reading(documents: str) -> Work:
    """Reading and tokenising a file of documents outside the models' work."""
    count = len(read_texts(documents))
    return Work("text", f"read and tokenise {count:,} documents of {documents}", sequences=count)


def generated_texts(samples: int, tokens: float) -> Texts:
    return Texts(samples, samples * tokens, samples * tokens, tokens, True)


def token_note(texts: Texts) -> list[str]:
    return [] if texts.measured else ["tokens counted as 4 characters each (no tokenizer file "
                                      "at hand)"]


def bootstrap(resamples: int, texts: int, evaluations: int) -> Work:
    seconds = resamples * texts * evaluations * BOOTSTRAP_S
    return Work("cpu", f"bootstrap: {evaluations} x {resamples:,} resamples of {texts:,}",
                seconds=seconds)


def calibrated(reference: str, sample: str, steps: int, device: str) -> tuple[ModelSize, Plan]:
    """The reference model an attack compares with (its domain reference when a public sample
    is given) and the work of training that reference, unless it is cached."""
    from core.cost.training import domain_reference_plan

    size = model_size(reference)
    if not sample.strip():
        return size, Plan()
    plan = domain_reference_plan(reference, sample, steps=steps, device=device)
    return replace(size, loaded=False), plan


def extraction(config) -> Plan:
    target = model_size(config.model)
    plan = Plan([load(target)])
    reference = None
    if config.reference:
        reference, domain = calibrated(config.reference, config.domain_sample,
                                       config.domain_steps, config.device)
        plan.add(domain).works.append(load(reference))
    room = min(config.tokens, target.context - 1)
    mean, notes = sample_length(config.corpus or config.prefixes, target, room)
    plan.assumptions += notes
    files = (config.corpus, config.prefixes if "prefix" in config.strategies else "")
    plan.works += [reading(f) for f in dict.fromkeys(files) if f.strip()]   # index, prompts
    prompt = (config.prefix_min_tokens + config.prefix_max_tokens) / 2
    for strategy in config.strategies:
        first = prompt if strategy == "prefix" else 0
        plan.works.append(generation(target, config.n_samples, room, config.batch_size, first,
                                     mean))
        samples = generated_texts(config.n_samples, first + mean)
        plan.works.append(scoring(target, samples, f"{strategy} samples and their lowercase", 2))
        if reference is not None:
            plan.works.append(scoring(reference, samples, f"{strategy} samples"))
    return plan


def user_inference(config) -> Plan:
    from core.attacks.user_inference.samples import load_samples

    target = model_size(config.model)
    reference, plan = calibrated(config.reference, config.domain_sample, config.domain_steps,
                                 config.device)
    samples = load_samples(config.data)
    users = len({s.user_id for s in samples})
    texts = text_stats([s.text for s in samples], target,
                       window=min(target.context, reference.context, 1024))
    plan.works += [load(target), load(reference), scoring(target, texts, f"{texts.count:,} "
                   "samples"), scoring(reference, texts, f"{texts.count:,} samples"),
                   bootstrap(config.bootstrap, users, 2)]
    return plan.add(Plan(assumptions=token_note(texts)))


def nid_audit(config) -> Plan:
    """The corpus read, then at most one identifier a text and its fresh twin scored after
    their context, under the target and the reference (``core.dp.nid_audit``)."""
    target = model_size(config.model)
    texts = sum(len(read_texts(source)) for source in config.corpus)
    strings = 2 * min(texts, config.max_identifiers)
    from core.dp.nid_formats import NID_TOKENS

    length = config.context_tokens + NID_TOKENS
    scored = Texts(strings, strings * length, strings * length, length, True)
    models = [target] + ([model_size(config.reference)] if config.reference.strip() else [])
    plan = Plan([reading(source) for source in config.corpus],
                ["one identifier a text at most (the corpus is not searched before Run)"])
    for size in models:
        plan.works += [load(size), scoring(size, scored, f"{strings:,} identifiers")]
    return plan


def mia(config) -> Plan:
    from core.attacks.membership.data import read_labelled
    from core.attacks.membership.scores import ATTACKS, REWRITING
    from core.rows import plain_texts

    target = model_size(config.model)
    table = read_labelled(config.data, config.mask)
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
    plan.works.append(bootstrap(config.bootstrap, texts.count, len(chosen) + 1))
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


def inextractability(config) -> Plan:
    from core.attacks.inextractability.spec import measured_texts

    size = model_size(config.model)
    texts = text_stats(measured_texts(config) + [p + s for p, s in config.pairs], size)
    return Plan([load(size), scoring(size, texts, f"{texts.count:,} texts and pairs")],
                token_note(texts))


def lazy_risk(config) -> Plan:
    target = model_size(config.model)
    calibration, plan = calibrated(config.calibration, config.domain_sample,
                                   config.domain_steps, config.device)
    plan.works += [load(target), load(calibration)]
    sets = {"train": config.train} | ({"test": config.test} if config.test.strip() else {})
    for name, source in sets.items():
        unique = list(dict.fromkeys(read_texts(source)))[: config.max_sentences]
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


def _phrase_tokens(phrase: str, size: ModelSize) -> int:
    from core.cost.sizes import chars_per_token

    return max(1, round(len(phrase) / chars_per_token([phrase], size)[0]))


def diffrank(config) -> Plan:
    from core.attacks.diffrank.search import widths

    before, plan = calibrated(config.before, config.domain_sample, config.domain_steps,
                              config.device)
    after = model_size(config.after)
    plan.works += [load(before), load(after)]
    models = (before, after)
    if config.strategy != "windows":
        size, floor = -(-config.beam // config.groups), -(-config.rows // config.groups)
        rows = [1, *widths(size, config.length, floor)[:-1]]   # the context, then each beam
        for model in models:
            plan.works.append(Work(
                "generate", f"beam search: {config.groups} x {sum(rows):,} sequences extended "
                f"by every token under {model.source}", model, tokens=config.groups * sum(rows),
                calls=config.groups * len(rows), rows=sum(rows) / len(rows),
                length=config.length / 2))
    if config.strategy != "beam":
        if config.sample.strip():
            texts = text_stats(read_texts(config.sample), after)
            plan.assumptions += token_note(texts)
        else:
            room = min(config.sample_tokens, after.context - 1)
            plan.works.append(generation(after, config.sample_texts, room, 64))
            texts = generated_texts(config.sample_texts, room)
            plan.assumptions.append(UPPER_BOUND)
        plan.works += [scoring(m, texts, "the windows' texts") for m in models]
    if config.phrase.strip():
        n = _phrase_tokens(config.phrase, after)
        if before.vocab ** n <= config.exhaustive_limit:   # every sequence of its length
            rows = sum(before.vocab ** i for i in range(n))
            plan.works += [Work("generate", f"enumerate all {before.vocab ** n:,} sequences of "
                                f"{n} tokens under {m.source}", m, tokens=rows, calls=n,
                                rows=min(rows, SCORE_ROWS), length=n / 2) for m in models]
    return plan


def pii_probe(config) -> Plan:
    """The probes' k samples each under the target, then every probe's true and fresh values
    scored after its prompt under the target and the reference (``core.attacks.pii_probe``)."""
    from core.attacks.pii_probe.probes import build_probes, prompt_text
    from core.attacks.pii_probe.subjects import subjects_of
    from core.errors import NotApplicable

    target = model_size(config.model)
    try:
        subjects, rows, _ = subjects_of(config)
    except NotApplicable as err:
        return Plan(assumptions=[f"not run: {err}"])
    probes = build_probes(subjects, config.probes)
    prompts = text_stats([prompt_text(p) + " " + p.value for p in probes], target)
    prompt = prompts.tokens / max(prompts.count, 1)
    samples = len(probes) * config.samples
    values = 1 + config.fresh
    scored = replace(prompts, count=prompts.count * values, tokens=prompts.tokens * values,
                     forward=prompts.forward * values)
    models = [target] + ([model_size(config.reference)] if config.reference.strip() else [])
    plan = Plan([Work("text", f"find the PII of {rows:,} rows", sequences=rows), load(target),
                 generation(target, samples, config.tokens, config.batch_size, prompt)],
                ["replies run to the most tokens allowed (an upper bound when they end early)",
                 "prompts counted without the chat template's tokens", *token_note(prompts)])
    for size in models:
        plan.works += ([load(size)] if size is not target else []) + [
            scoring(size, scored, f"{len(probes):,} true and {len(probes) * config.fresh:,} "
                    "fresh values")]
    return plan
