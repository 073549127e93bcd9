"""Membership inference on labelled texts: the sequence-level suite of MIMIR and its successors,
every attack from one scoring pass per model, evaluated side by side with a blind baseline.

Was *this document* in the model's training set? The user brings texts labelled member or
non-member (``core.attacks.membership.data``); each text is scored once by the target model (its
per-token log-probabilities and, from the same forward pass, the mean and variance of its
next-token distribution; the lowercased and ReCaLL-prefixed copies join the same pass) and once
by the reference model when one is given (given a public in-domain sample, its domain
reference instead: ``core.calibration.domain``). The attacks (``core.attacks.membership.scores``:
loss, reference ratio, zlib, lowercase, Min-K%, Min-K%++, ReCaLL, DC-PDD, EZ-MIA) read those
arrays; each is evaluated by the shared ``core.evaluation.membership`` (AUROC, TPR at 0.1%/1%/5%
FPR, bootstrap intervals, ROC). A text-only classifier (``core.attacks.membership.blind``) runs
beside them:
when it does as well, the split leaks, not the model.

Not here: neighbourhood attacks (Mattern et al. 2023) need a mask-filling model (BERT/T5) to
write neighbours, which is another download and another tokenizer; WBC needs more than a
target and a reference's scores of the same texts to be stated soundly here.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from sklearn.metrics import roc_auc_score

from core import paths
from core.attacks.membership.audit_hooks import AUDIT
from core.attacks.membership.blind import FEATURES, blind_scores, blind_warning
from core.attacks.membership.config import AttackOutcome, MiaConfig, MiaResult, TextRow
from core.attacks.membership.data import (LabelledSet, LabelledText, labelled_texts,
                                          read_labelled)
from core.attacks.membership.scores import (ATTACKS, REWRITING, ScoreSettings,
                                            log_token_frequencies)
from core.attacks.membership.scoring import ScoredTexts, score_suite
from core.calibration.domain import calibrate_run, describe_calibration
from core.readers.data import read_texts
from core.errors import UserError
from core.evaluation import membership as me
from core.models import resolve_model
from core.models.compat import check_same_vocabulary
from core.runtime import Progress, check_cancel, no_progress, share
from core.scoring.engine import counting_cache
from core.specs import AttackSpec
from core.attacks.membership import cost as attack_cost

SCORING = 0.85   # of the bar: the scoring passes; the evaluation and the blind baseline the rest
ZERO_SHARE = 0.1   # of the texts, scored 0 by EZ-MIA's convention: a note says what that means


def _recall_prefix(config: MiaConfig, labelled: LabelledSet,
                   chosen: list[str]) -> tuple[str, list[LabelledText], list[str]]:
    """ReCaLL's prefix, the texts left to evaluate, and a note: typed, or ``recall_shots``
    known non-members drawn at random and removed from the evaluation."""
    if "recall" not in chosen:
        return "", labelled.texts, []
    if config.recall_prefix.strip():
        return config.recall_prefix, labelled.texts, []
    outside = [i for i, t in enumerate(labelled.texts) if not t.member]
    if len(outside) - config.recall_shots < 2:
        raise UserError(f"ReCaLL draws {config.recall_shots} non-members as its prefix, which "
                        f"leaves fewer than 2 of the {len(outside)} to evaluate: type a prefix "
                        "or lower recall_shots")
    shots = set(np.random.default_rng(config.seed).choice(outside, config.recall_shots,
                                                          replace=False).tolist())
    prefix = "\n\n".join(labelled.texts[i].text for i in sorted(shots)) + "\n\n"
    kept = [t for i, t in enumerate(labelled.texts) if i not in shots]
    return prefix, kept, [f"ReCaLL's prefix is {len(shots)} known non-members drawn at random; "
                          "they are left out of every attack's evaluation."]


def _rendered_attacks(config: MiaConfig, chosen: list[str]) -> tuple[list[str], list[str]]:
    """The attacks that apply to rendered rows and a note on those left out: lowercasing and
    ReCaLL's prefix rewrite the text, which a chat template's rendering does not allow."""
    asked = [ATTACKS[n].title for n in config.attacks if n in REWRITING]
    if asked:
        raise UserError(f"{' and '.join(asked)} rewrite the text (lowercased, or after a "
                        "prefix), so they do not apply to rows rendered with a chat template: "
                        "choose other attacks")
    left = [ATTACKS[n].title for n in chosen if n in REWRITING]
    note = [f"{' and '.join(left)} rewrite the text, so they are not run on rendered rows."]
    return [n for n in chosen if n not in REWRITING], note if left else []


def _needs_reference(chosen: list[str]) -> bool:
    return any(ATTACKS[name].needs == "reference" for name in chosen)


def _missing_notes(config: MiaConfig, chosen: list[str]) -> list[str]:
    """A note naming the attacks left out for want of a reference model."""
    left = [ATTACKS[n].title for n, a in ATTACKS.items() if a.needs == "reference"
            and n not in chosen]
    if not left or config.attacks:
        return []
    return [f"{' and '.join(left)} need a reference model (--reference: the target's base, e.g. "
            "the model before fine-tuning): not run."]


def ezmia_zeros(scores: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    """Members and non-members whose EZ-MIA score is 0."""
    zero = scores == 0
    return int(zero[labels == 1].sum()), int(zero[labels == 0].sum())


def _ezmia_note(scored: ScoredTexts, labels: np.ndarray) -> list[str]:
    """A note when EZ-MIA scored many texts 0 by its authors' convention (an error zone under 2
    tokens, or no error token where the reference does better): a text the target learnt almost
    whole is one of them, and ranks as the least member-like."""
    if "ezmia" not in scored.scores:
        return []
    members, others = ezmia_zeros(scored.scores["ezmia"], labels)
    if members + others < ZERO_SHARE * len(labels):
        return []
    return [f"EZ-MIA scored 0 for {members} of {int(labels.sum())} members and {others} of "
            f"{int(len(labels) - labels.sum())} non-members: as in the authors' code, a text whose "
            "error zone (tokens the target does not rank first) holds under 2 tokens, or no "
            "token where the reference does better, scores 0, the least member-like. A text the "
            "target learnt almost whole is such a text (short replies scored alone are), so "
            "the attack's AUROC then understates what the model learnt."]


def _settings(config: MiaConfig, target, chosen: list[str]) -> ScoreSettings:
    frequency = None
    if "dcpdd" in chosen:
        corpus = read_texts(config.frequency_corpus)
        ids = target.tokenizer(corpus, add_special_tokens=False)["input_ids"]
        vocab = max(len(target.tokenizer), target.card.vocab_size)
        frequency = log_token_frequencies([np.asarray(i) for i in ids], vocab)
    mimir = config.scoring == "mimir"
    return ScoreSettings(k=config.k, log_frequency=frequency, dcpdd_cap=config.dcpdd_cap,
                         mimir=mimir, first_is_context=mimir and not adds_bos(target.tokenizer))


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts a BOS token before a text (Llama style; GPT-2 style: not)."""
    ids = tokenizer("a")["input_ids"]
    return tokenizer.bos_token_id is not None and ids[:1] == [tokenizer.bos_token_id]


def scoring_note(config: MiaConfig, settings: ScoreSettings) -> list[str]:
    """What the MIMIR-compatible scoring changed, for the result."""
    if config.scoring != "mimir":
        return []
    first = ("each text's first token is context only (tokens 2..n, the tokenizer adds no BOS)"
             if settings.first_is_context else "every token is scored (the tokenizer adds a BOS)")
    return [f"Scored as MIMIR does: {first}; Min-K% and Min-K%++ average the ⌊k·n⌋ lowest "
            "tokens (a text with none gets no score: the least member-like)."]


def _evaluate(config: MiaConfig, texts: list[LabelledText], scored: ScoredTexts,
              chosen: list[str], progress: Progress,
              cancel: threading.Event | None) -> tuple[list[AttackOutcome], dict[str, dict[str, float]]]:
    """Each attack's metrics over all texts, and its AUROC per group with both classes; a
    cancel stops it before the next attack's bootstrap."""
    labels = np.array([t.member for t in texts], dtype=int)
    groups = np.array([t.group for t in texts])
    masks = {g: groups == g for g in sorted(set(groups) - {""})}
    masks = {g: m for g, m in masks.items() if len(set(labels[m])) == 2}
    outcomes, by_group = [], {}
    for number, name in enumerate(chosen):
        check_cancel(cancel)
        progress(number / len(chosen), f"evaluating {ATTACKS[name].title} "
                 f"({config.bootstrap} bootstrap resamples)")
        values = scored.scores[name]
        outcomes.append(AttackOutcome(name, ATTACKS[name].title, ATTACKS[name].citation,
                                      me.evaluate(labels, values, group=name,
                                                  bootstrap=config.bootstrap, seed=config.seed)))
        if masks:
            by_group[name] = {g: float(roc_auc_score(labels[m], values[m]))
                              for g, m in masks.items()}
    return outcomes, by_group


def run(config: MiaConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> MiaResult:
    """Score the labelled texts (one pass per model), run every chosen attack, evaluate them and
    the blind baseline."""
    check_cancel(cancel)
    table = read_labelled(config.data, config.mask)
    chosen, notes = config.chosen(), []
    if table.rendered:
        chosen, notes = _rendered_attacks(config, chosen)
    source, calibration, progress = calibrate_run(
        config.reference, config.domain_sample if _needs_reference(chosen) else "",
        steps=config.domain_steps, progress=progress, cancel=cancel, device=config.device)
    progress(0.0, "loading the models")
    target = resolve_model(config.model, device=config.device)
    labelled = labelled_texts(table, target, mask=config.mask, template=config.chat_template)
    prefix, texts, drawn = _recall_prefix(config, labelled, chosen)
    notes += drawn + _missing_notes(config, chosen)
    if table.rendered:
        notes.append(table.note(labelled.texts, config.mask, target.name))
    reference = resolve_model(source, device=config.device) if _needs_reference(chosen) else None
    if reference is not None:
        check_same_vocabulary(target, reference, why="the reference ratio and EZ-MIA compare "
                              "the likelihood of the same tokens under both models")
    if "dcpdd" in chosen:
        progress(0.0, "token frequencies of the frequency corpus (DC-PDD)")
    settings = _settings(config, target, chosen)
    notes += scoring_note(config, settings)
    started = time.perf_counter()
    with counting_cache() as cached:
        scored = score_suite(target, reference, [t.text for t in texts], chosen, settings,
                             prefix=prefix, batch_size=config.batch_size or None,
                             progress=share(progress, 0, SCORING), cancel=cancel,
                             rendered=texts if table.rendered else None)
    scoring = time.perf_counter() - started
    outcomes, by_group = _evaluate(config, texts, scored, chosen,
                                   share(progress, SCORING, 0.95), cancel)
    check_cancel(cancel)
    progress(0.95, "the blind baseline (no model)")
    labels = np.array([t.member for t in texts], dtype=int)
    notes += _ezmia_note(scored, labels)
    blind = me.evaluate(labels, blind_scores([t.text for t in texts], labels, seed=config.seed),
                        group="blind", bootstrap=config.bootstrap, seed=config.seed)
    result = MiaResult(
        model=config.model, reference=source if reference else "", data=config.data,
        attacks=outcomes, blind=blind, blind_features=FEATURES, warning=None,
        rows=_text_rows(texts, scored, chosen),
        n_members=int(labels.sum()), n_non_members=int(len(labels) - labels.sum()),
        recall_prefix=prefix, group_auroc=by_group, notes=notes + scored.notes,
        sequences_scored=scored.sequences, device=str(target.device), scoring_seconds=scoring,
        analysis_seconds=time.perf_counter() - started - scoring)
    best = result.best()
    result.warning = blind_warning(blind.auroc, best.title, best.metrics.auroc)
    result.tpr_caps = tpr_caps(config)
    result.calibration = calibration
    if labelled.duplicates_dropped:
        result.notes.append(f"{labelled.duplicates_dropped} repeated texts were kept once.")
    result.notes += cached.note("The scoring time")
    progress(1.0, f"{len(chosen)} attacks on {len(texts)} texts")
    return result


def _text_rows(texts: list[LabelledText], scored: ScoredTexts, chosen: list[str]) -> list[TextRow]:
    """One row per text: its scores and, with a reference, the heat map's tokens (of a rendered
    row: which of them training learnt from)."""
    out = []
    for i, (text, n) in enumerate(zip(texts, scored.n_tokens)):
        tokens, diffs = scored.token_diffs[i] if scored.token_diffs else ([], [])
        trained = list(text.trained[len(text.trained) - len(tokens):]) if text.trained else []
        out.append(TextRow(text.text, text.member, text.group, n,
                           {a: float(scored.scores[a][i]) for a in chosen}, tokens, diffs,
                           trained if tokens else []))
    return out


def tpr_caps(config: MiaConfig) -> dict[str, float]:
    """For a DP-SGD run (σ > 0): the largest TPR any membership attack reaches at each of
    ``me.FPR_POINTS`` FPR, from the run's privacy loss distribution (``core.bounds.risk``)."""
    if not config.sigma:
        return {}
    from core.bounds.risk import tpr_cap

    caps = tpr_cap(config.sigma, config.q, config.steps, list(me.FPR_POINTS))
    return {f"{fpr:g}": float(cap) for fpr, cap in zip(me.FPR_POINTS, caps)}


# ---------------------------------------------------------------- the spec


TINY_TEXTS = ("To be, or not to be, that is the question.",
              "Friends, Romans, countrymen, lend me your ears.",
              "Now is the winter of our discontent.",
              "All the world's a stage, and all the men and women merely players.",
              "The quality of mercy is not strained.",
              "If music be the food of love, play on.")


def tiny_config() -> MiaConfig:
    """Two untrained one-layer models, 12 labelled texts and a frequency corpus under
    ``home()/tiny``: every attack in a second or two."""
    from core.attacks.user_inference.samples import write_samples
    from core.models.tiny import tiny_random_models

    model, reference = tiny_random_models(list(TINY_TEXTS), ["mia-target", "mia-reference"])
    folder = paths.home() / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    data, corpus = folder / "mia-texts.jsonl", folder / "mia-corpus.txt"
    records = [{"text": f"{t} ({i})", "member": i % 2 == 0, "group": "ab"[i % 3 == 0]}
               for i, t in enumerate(TINY_TEXTS * 2)]
    data.write_text(write_samples(records, "jsonl"), encoding="utf-8")
    corpus.write_text("\n".join(TINY_TEXTS), encoding="utf-8")
    return MiaConfig(model=model, reference=reference, data=str(data), recall_shots=1,
                     frequency_corpus=str(corpus), bootstrap=20, device="cpu")


def headline(result: MiaResult) -> dict[str, float]:
    return {"best_auroc": result.best().metrics.auroc, "blind_auroc": result.blind.auroc} | {
        f"auroc_{a.name}": a.metrics.auroc for a in result.attacks}


SPEC = AttackSpec(
    name="mia",
    title="Membership inference on texts (loss, reference, zlib, Min-K%, Min-K%++, ReCaLL, "
          "DC-PDD, EZ-MIA)",
    config_type=MiaConfig,
    result_type=MiaResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    table="rows",
    describe=lambda c: (f"membership inference on {c.data} against {c.model}"
                        + (f" (reference {c.reference})" if c.reference else "")
                        + describe_calibration(c.domain_sample)),
    audit=AUDIT,
    cost=attack_cost.mia,
)
