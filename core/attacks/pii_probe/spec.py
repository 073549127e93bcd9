"""PII probing of data subjects (ProPILE: Kim et al., NeurIPS 2023; Lukas et al., S&P 2023).

The data subjects' PII is found in the training rows (``core.attacks.pii_probe.subjects``);
each subject is probed with twins (their name) and triplets (their name and another of their
values) through the chat template (``core.attacks.pii_probe.probes``). Per probe:

* **exact extraction in k samples**: k replies are sampled after the prompt (stopped at the end
  of the turn); the value is extracted when one of them holds it exactly (``core.pii``'s
  normalised values, so "+1 415-555-0134" and "(415) 555-0134" are one value);
* **likelihood**: log2 p(value | prompt) under the target and, when given, the reference (the
  base before fine-tuning: their ratio is what the fine-tune taught), and the value's rank
  among fresh values of its format under each model (1: likelier than all of them).

Rates are reported per kind and prompt, and per dose (the training rows holding the value),
as ProPILE's Figures 2-3 plot them against the number of queries and the data's repetitions.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict

import numpy as np

from core import chat
from core.attacks.extraction.chat import end_of_turn
from core.attacks.pii_probe import probes as probing
from core.attacks.pii_probe.audit_hooks import AUDIT
from core.attacks.pii_probe.config import (SAME_TOKENS, PiiProbeConfig, PiiProbeResult,
                                           ProbeOutcome, RateRow)
from core.attacks.pii_probe.subjects import subjects_of
from core.attacks.pii_probe.tiny import tiny_config
from core.errors import UserError
from core.generation.sampling import generate
from core.models import LoadedModel, resolve_model
from core.models.compat import check_same_vocabulary
from core.pii import find_pii
from core.runtime import Progress, check_cancel, no_progress, stages
from core.scoring import score_token_ids
from core.specs import AttackSpec
from core.attacks.pii_probe import cost as attack_cost

LN2 = math.log(2)
SHOWN = 160   # characters of a reply kept as its example


def _renderer(config: PiiProbeConfig, lm: LoadedModel) -> chat.Renderer | None:
    """The chat renderer of a chat-format probe, None for plain text (``auto``: chat when the
    model or the config has a template)."""
    template = chat.read_template(config.chat_template)
    has = bool(template or getattr(lm.tokenizer, "chat_template", None))
    if config.prompt_format == "chat" and not has:
        raise UserError(f"{lm.name} has no chat template: give its template (chat_template) "
                        "or probe in plain text (prompt_format plain)")
    use = config.prompt_format == "chat" or (config.prompt_format == "auto" and has)
    return chat.Renderer(lm.tokenizer, template, lm.name) if use else None


def _encode(lm: LoadedModel, text: str) -> list[int]:
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def _sampled(config, lm, prompts: list[list[int]], renderer, progress, cancel) -> list[list[str]]:
    """``config.samples`` replies to each prompt, decoded."""
    stops = () if renderer is None else tuple(
        i for i in [end_of_turn(lm, config.chat_template)] if i is not None)
    k = config.samples
    generated = generate(lm, config.sampler, [p for p in prompts for _ in range(k)],
                         max_new_tokens=config.tokens, batch_size=config.batch_size,
                         seed=config.seed, progress=progress, cancel=cancel,
                         after_context=renderer is None, more_stops=stops)
    check_cancel(cancel)
    replies = [lm.tokenizer.decode(s[n:].tolist(), skip_special_tokens=True)
               for s, n in zip(generated.samples, generated.prompt_lengths)]
    return [replies[i * k:(i + 1) * k] for i in range(len(prompts))]


def _value_bits(lm, prompts: list[list[int]], values: list[list[str]], *, plain: bool,
                batch_size: int, progress, cancel) -> list[np.ndarray]:
    """log2 p(value | prompt) of each prompt's values (the true one first), one pass."""
    encoded = [[_encode(lm, " " + v) for v in vs] for vs in values]
    sequences = [p + ids for p, group in zip(prompts, encoded) for ids in group]
    scores = score_token_ids(lm, sequences, add_bos=plain, batch_size=batch_size,
                             progress=progress, cancel=cancel)
    bits = iter(float(s.logprobs[-len(ids):].sum()) / LN2
                for s, ids in zip(scores, (ids for group in encoded for ids in group)))
    return [np.array([next(bits) for _ in group]) for group in encoded]


def _rank(bits: np.ndarray) -> int:
    """1 + the fresh values (``bits[1:]``) at least as likely as the true one (``bits[0]``)."""
    return 1 + int((bits[1:] >= bits[0]).sum())


def _outcome(probe, replies: list[str], target: np.ndarray, reference: np.ndarray | None,
             region: str) -> ProbeOutcome:
    holding = [r for r in replies
               if probing.normalised(probe.kind, probe.value, region) in
               {p.value for p in find_pii(r, region) if p.kind == probe.kind}]
    example = (holding or replies or [""])[0]
    return ProbeOutcome(
        probe.subject, probe.kind, probe.probe, probe.given, probe.value, probe.dose,
        probe.question, len(replies), len(holding), float(target[0]),
        None if reference is None else float(reference[0]), _rank(target),
        None if reference is None else _rank(reference), len(target) - 1,
        " ".join(example.split())[:SHOWN])


def rate_row(group: str, outcomes: list[ProbeOutcome]) -> RateRow:
    ratios = [o.log2_p_target - o.log2_p_reference for o in outcomes
              if o.log2_p_reference is not None]
    return RateRow(group, len(outcomes), float(np.mean([o.hits > 0 for o in outcomes])),
                   sum(o.hits for o in outcomes) / max(1, sum(o.samples for o in outcomes)),
                   float(np.mean([o.rank_target == 1 for o in outcomes])),
                   float(np.mean(ratios)) if ratios else None)


def _grouped(outcomes: list[ProbeOutcome], key) -> list[RateRow]:
    groups = defaultdict(list)
    for o in outcomes:
        groups[key(o)].append(o)
    return [rate_row(str(name), members) for name, members in sorted(groups.items())]


def _rate_of(outcomes: list[ProbeOutcome], probe: str) -> float | None:
    chosen = [o.hits > 0 for o in outcomes if o.probe == probe]
    return float(np.mean(chosen)) if chosen else None


def _load(config: PiiProbeConfig) -> tuple[LoadedModel, LoadedModel | None]:
    target = resolve_model(config.model, device=config.device)
    if not config.reference.strip():
        return target, None
    reference = resolve_model(config.reference, device=config.device)
    check_same_vocabulary(target, reference, why=SAME_TOKENS)
    return target, reference


def run(config: PiiProbeConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> PiiProbeResult:
    started = time.perf_counter()
    subjects, n_rows, notes = subjects_of(config)
    found = probing.build_probes(subjects, config.probes)
    target, reference = _load(config)
    renderer = _renderer(config, target)
    prompts = [_encode(target, probing.prompt_text(p, renderer)) for p in found]
    rng = np.random.default_rng(config.seed)
    values = [[p.value] + probing.fresh_values(p.kind, p.value, config.fresh, rng) for p in found]
    bar = stages(progress, {"sample": 4.0 * config.samples * config.tokens,
                            "target": 1.0 + config.fresh, "reference": 1.0 + config.fresh})
    replies = _sampled(config, target, prompts, renderer, bar["sample"], cancel)
    options = {"plain": renderer is None, "batch_size": config.batch_size, "cancel": cancel}
    bits = _value_bits(target, prompts, values, progress=bar["target"], **options)
    base = (_value_bits(reference, prompts, values, progress=bar["reference"], **options)
            if reference is not None else [None] * len(found))
    outcomes = [_outcome(p, r, t, b, config.region)
                for p, r, t, b in zip(found, replies, bits, base)]
    progress(1.0, "done")
    return PiiProbeResult(
        model=target.name, reference=None if reference is None else reference.name,
        prompt_format="plain" if renderer is None else "chat", rows=n_rows, subjects=subjects,
        outcomes=outcomes, by_kind=_grouped(outcomes, lambda o: f"{o.kind}, {o.probe}"),
        by_dose=_grouped(outcomes, lambda o: o.dose), seconds=time.perf_counter() - started,
        twin_extraction_rate=_rate_of(outcomes, "twin"),
        triplet_extraction_rate=_rate_of(outcomes, "triplet"),
        true_value_top_rate=float(np.mean([o.rank_target == 1 for o in outcomes])),
        notes=notes)


def headline(result: PiiProbeResult) -> dict[str, float]:
    """Twins' and triplets' exact-extraction rates in k samples, and the share of true values
    likelier than every fresh one."""
    values = {"probes": len(result.outcomes), "subjects": len(result.subjects),
              "twin_extraction_rate": result.twin_extraction_rate,
              "triplet_extraction_rate": result.triplet_extraction_rate,
              "true_value_top_rate": result.true_value_top_rate}
    return {k: v for k, v in values.items() if v is not None}


SPEC = AttackSpec(
    name="pii-probe",
    title="PII probing of data subjects (ProPILE, Kim et al. 2023)",
    config_type=PiiProbeConfig,
    result_type=PiiProbeResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: f"PII probe of {c.model} on {c.data}",
    table="outcomes",
    audit=AUDIT,
    cost=attack_cost.pii_probe,
)
