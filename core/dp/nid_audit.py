"""Post-hoc DP audit of a trained model with natural identifiers (NIDs): no canary planted.

Natural Identifiers for Privacy and Data Audits in Large Language Models (CISPA, ICLR 2026):
random strings of a known format occur naturally in training corpora (git commit SHA-1s,
SHA-256 and MD5 hashes, UUID v4s, ``core.dp.nid_formats``), and because fresh strings of the same
distribution can be drawn at will, the identifiers act as canaries after the fact.

Each distinct identifier of the corpus is a member; for each, a fresh string of its format
(same length, layout and case, uniform: ``nid_formats.fresh_identifier``) in its first
occurrence's place is a non-member. Every string is scored with the scoring engine,

    s = log p_target(identifier tokens | up to ``context_tokens`` tokens before it)
        − log p_reference(the same)    (given a reference: the base before fine-tuning)

(the tokens of the text up to the identifier's end that overlap it, a leading space merged into
its first token included). A fine-tuner's rows (conversations, prompt-completion, preference:
``core.chat``) are rendered with the target's chat template and searched only in the tokens
training learnt from, each identifier scored after its whole row up to it
(``core.dp.nid_corpus``). The scores go to ``core.dp.audit.audit_scores`` with the one-run
bounds the canary audit uses (Steinke, Nasr & Jagielski 2023; the f-DP one of Mahloujifar et al.
2025 beside), and to ``core.evaluation.membership`` for the AUROC and the TPR at low FPR.

What the bound rests on: the members were not put into training by a coin, so the bound holds
as far as the fresh strings are drawn from the distribution the identifiers were (the paper's
argument; a hash of known content or a sequential id breaks it), and an identifier with many
copies is a group of records: its privacy loss is a group's.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from core import chat
from core.bounds import training_run
from core.readers.data import FORMATS_HELP, read_texts
from core.dp.audit import (DpAuditResult, audit_scores, delta_param,
                           run_epsilons)
from core.dp.audit_methods import ONE_RUN_METHODS
from core.dp.nid_audit_hooks import AUDIT
from core.dp.nid_formats import (DEFAULT_FORMATS, FORMATS, NID_STREAM, Found, IdFormat,
                                 custom_format, find_identifiers, fresh_identifiers)
from core.dp.nid_corpus import Corpus, read_corpus
from core.dp.nid_scoring import identifier_logprobs
from core.errors import UserError
from core.evaluation import membership as me
from core.models import LoadedModel, resolve_model
from core.models.compat import check_same_vocabulary
from core.runtime import Progress, check_cancel, no_progress, share
from core.specs import AttackSpec, check_params, param
from core.dp import costs as dp_costs

FormatName = Literal[tuple(FORMATS)]
MIN_IDENTIFIERS = 10    # members; as many fresh strings beside them
MAX_IDENTIFIERS = 50_000   # twice that is the auditor's most canaries
FEWER_TOKENS = 0.5      # members shorter than fresh strings by this many tokens: a note


@dataclass(frozen=True)
class NidAuditConfig:
    model: str = param("", path="model", label="target model",
                       help="the trained model to audit (folder, .zip, .gguf, smollm2, a named "
                            "source)")
    corpus: tuple[str, ...] = param((), path="data", label="corpus files",
                                    help="the training data that holds the identifiers: "
                                         + FORMATS_HELP + "; a fine-tuner's rows are searched "
                                         "in their trained tokens only")
    reference: str = param("", path="model", label="reference model",
                           help="optional: the base before fine-tuning (same tokenizer); score "
                                "= log p_target − log p_reference, else log p_target")
    formats: tuple[FormatName, ...] = param(
        DEFAULT_FORMATS, flags=("--format",),
        help="identifier formats to look for: " + "; ".join(
            f"{f.name}: {f.description}" for f in FORMATS.values()))
    pattern: str = param("", label="own pattern",
                         help="optional: a regular expression of your own identifiers, searched "
                              "too (a fixed prefix goes in a look-behind: (?<=sk-)[A-Za-z0-9]{32})")
    alphabet: str = param("", help="the alphabet of the pattern's random characters (with "
                                   "--pattern), e.g. 0123456789abcdef")
    context_tokens: int = param(32, ge=0, le=1024, label="context tokens",
                                help="tokens of a plain text before an identifier it is scored "
                                     "after (in a fine-tuner's row: its whole row up to it)")
    max_identifiers: int = param(1000, ge=MIN_IDENTIFIERS, le=MAX_IDENTIFIERS,
                                 help="distinct identifiers audited (drawn at random when the "
                                      "corpus holds more), as many fresh strings beside")
    delta: float = delta_param()
    confidence: float = param(0.95, ge=0.5, le=0.9999,
                              help="1 − β: the audited bound holds with at least this "
                                   "probability")
    sigma: float = training_run.sigma_param()   # with q and steps: the accountant's ε beside
    q: float = training_run.q_param()
    steps: int = training_run.steps_param()
    seed: int = param(0, ge=0, le=2**31 - 1, help="the fresh strings, the identifiers drawn and "
                                                  "the auditor's tie-breaks")
    device: Literal["auto", "cpu", "cuda"] = param("auto", help="auto: CUDA when there is one",
                                                   page="advanced")
    mask: chat.MaskName = chat.mask_param("advanced")   # of a fine-tuner's rows (core.chat)
    chat_template: str = chat.template_param()

    def __post_init__(self) -> None:
        if isinstance(self.corpus, str):   # one file, as the audit gives its corpus
            object.__setattr__(self, "corpus", (self.corpus,) if self.corpus.strip() else ())
        check_params(self)
        if not self.model.strip():
            raise UserError("choose a model (a folder, a .zip, a .gguf, smollm2 or a named source)")
        if not self.formats and not self.pattern:
            raise UserError("choose an identifier format or give your own pattern and its "
                            "alphabet (Own pattern and Alphabet; --pattern and --alphabet)")
        if len(set(self.formats)) != len(self.formats):
            raise UserError(f"the formats must not repeat, got {', '.join(self.formats)}")
        if self.pattern:
            custom_format(self.pattern, self.alphabet)   # a UserError for a bad one
        elif self.alphabet:
            raise UserError("an alphabet goes with a pattern (Own pattern; --pattern): give "
                            "both or neither")

    def id_formats(self) -> dict[str, IdFormat]:
        """The formats searched, by name: the chosen built-ins, then the user's pattern."""
        chosen = {name: FORMATS[name] for name in self.formats}
        return chosen | ({"custom": custom_format(self.pattern, self.alphabet)}
                         if self.pattern else {})


@dataclass
class NidScore:
    """One scored string: an identifier of the corpus (member) or a fresh one in its place."""

    value: str
    format: str
    member: bool
    copies: int                   # occurrences in the corpus; 0 for a fresh string
    tokens: int                   # the identifier's tokens scored
    logp_target: float            # natural log
    logp_reference: float | None
    score: float                  # what the audit reads


@dataclass
class NidAuditResult:
    config: NidAuditConfig
    texts: int                    # documents searched
    found: dict[str, int]         # format -> distinct identifiers found
    occurrences: int              # identifier occurrences in all
    members: int                  # identifiers audited (≤ max_identifiers)
    duplicated: int               # of them, identifiers that occur more than once
    max_copies: int
    identifiers: list[NidScore]   # members, then their fresh strings in the same order
    epsilon_lower: float          # audited, at ``audit.epsilon_lower_confidence``
    epsilon_upper: float | None   # the accountant's ε for one record (σ, q, steps given)
    auroc: float
    tpr_at_1pct_fpr: float
    metrics: me.Metrics
    audit: DpAuditResult
    notes: list[str]
    device: str
    seconds: float
    stopped_early: bool = False


def audited_identifiers(config: NidAuditConfig, corpus: Corpus,
                        formats: dict[str, IdFormat]) -> tuple[list[Found], list[Found]]:
    """(every distinct identifier found, those audited: at most ``max_identifiers`` drawn at
    random, in corpus order); a ``UserError`` when there are fewer than ``MIN_IDENTIFIERS``."""
    texts = corpus.texts
    found = find_identifiers(texts, list(formats.values()), corpus.trained)
    wanted = ", ".join(f.description for f in formats.values()) + (
        " (in the tokens training learnt from)" if corpus.rendered else "")
    if not found:
        raise UserError(f"found no identifier matching {wanted} in {len(texts):,} texts: for "
                        "another format give your own pattern (a regular expression) and its "
                        "alphabet: Own pattern and Alphabet on the page, --pattern and "
                        "--alphabet in the CLI, nid-audit.pattern=... and nid-audit.alphabet=... "
                        "in an audit's settings")
    if len(found) < MIN_IDENTIFIERS:
        raise UserError(f"found {len(found)} distinct identifiers ({wanted}) in {len(texts):,} "
                        f"texts: the audit needs at least {MIN_IDENTIFIERS}")
    if len(found) <= config.max_identifiers:
        return found, found
    rng = np.random.default_rng([NID_STREAM, config.seed, 2])
    drawn = np.sort(rng.choice(len(found), config.max_identifiers, replace=False))
    return found, [found[i] for i in drawn]


def target_loader(config: NidAuditConfig, progress: Progress) -> Callable[[], LoadedModel]:
    """The target, loaded when first asked for: to render a row, or else to score."""
    @functools.cache
    def target() -> LoadedModel:
        progress(0.02, f"loading {config.model}")
        return resolve_model(config.model, device=config.device)
    return target


def load_reference(config: NidAuditConfig, target: LoadedModel) -> LoadedModel | None:
    """The reference (None when none is given), checked to share the target's tokenizer."""
    if not config.reference.strip():
        return None
    reference = resolve_model(config.reference, device=config.device)
    check_same_vocabulary(target, reference, why="the score compares the log-probabilities of "
                                                 "the same identifier tokens")
    return reference


def audit_notes(config: NidAuditConfig, corpus: Corpus, found: list[Found],
                audited: list[Found], lengths: list[int]) -> list[str]:
    """What the bound is, and what it rests on (module doc), in plain words; ``lengths``: the
    tokens of each member, then of each fresh string."""
    notes = [f"A post-hoc audit of the {len(audited):,} identifiers the corpus holds: they were "
             "not put into training by a coin, so the bound holds as far as the fresh strings "
             "are drawn from the distribution the identifiers were (uniform over the format; a "
             "hash of known content or a sequential id breaks it). Members and fresh strings "
             "are paired, half and half.", *corpus.notes]
    if len(audited) < len(found):
        notes.append(f"{len(found):,} distinct identifiers found; {len(audited):,} drawn at "
                     "random (max_identifiers).")
    if np.mean(lengths[:len(audited)]) < np.mean(lengths[len(audited):]) - FEWER_TOKENS:
        notes.append(f"The identifiers take {np.mean(lengths[:len(audited)]):.1f} tokens on "
                     f"average, the fresh strings {np.mean(lengths[len(audited):]):.1f}: the "
                     "tokenizer learnt merges from the identifiers (it was trained on this "
                     "corpus), which alone tells them apart; a reference model with the same "
                     "tokenizer cancels part of it.")
    copies = [f.copies for f in audited if f.copies > 1]
    if copies:
        notes.append(f"{len(copies):,} identifiers occur more than once (up to {max(copies)} "
                     "copies): each is a group of records, so their privacy loss is a group's, "
                     "not one record's.")
    notes.append("Score: log p_target − log p_reference of the identifier's tokens given the "
                 "context." if config.reference.strip() else
                 "Score: log p_target of the identifier's tokens given the context (no "
                 "reference: what the model already prefers of a format is not removed).")
    return notes


def score_rows(audited: list[Found], fresh: list[str], lengths: list[int],
               logp_target: np.ndarray, logp_reference: np.ndarray | None,
               scores: np.ndarray) -> list[NidScore]:
    """The result's table: the members, then their fresh strings in the same order."""
    strings = [(f.value, f.format, True, f.copies) for f in audited] + [
        (value, f.format, False, 0) for f, value in zip(audited, fresh)]
    reference = [None] * len(scores) if logp_reference is None else logp_reference.tolist()
    return [NidScore(*string, int(tokens), float(target), ref, float(score))
            for string, tokens, target, ref, score in zip(strings, lengths, logp_target,
                                                          reference, scores)]


def run(config: NidAuditConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> NidAuditResult:
    """Find the identifiers, draw their fresh twins, score both, audit (module doc)."""
    started = time.perf_counter()
    progress(0.0, "reading the corpus")
    check_cancel(cancel)
    target = target_loader(config, progress)
    corpus = read_corpus(config.corpus, target, mask=config.mask, template=config.chat_template)
    formats = config.id_formats()
    found, audited = audited_identifiers(config, corpus, formats)
    fresh = fresh_identifiers(audited, corpus.texts, formats, seed=config.seed,
                              taken={f.value for f in found})
    check_cancel(cancel)
    reference = load_reference(config, target())
    sequences, lengths, context = corpus.sequences(target().tokenizer, audited, fresh,
                                                   config.context_tokens)
    logp_target = identifier_logprobs(target(), sequences, lengths, cancel=cancel,
                                      context=context,
                                      progress=share(progress, 0.05, 0.5 if reference else 0.95,
                                                     "the target: "))
    logp_reference = None if reference is None else identifier_logprobs(
        reference, sequences, lengths, cancel=cancel, context=context,
        progress=share(progress, 0.5, 0.95, "the reference: "))
    scores = logp_target if logp_reference is None else logp_target - logp_reference
    members = np.arange(len(scores)) < len(audited)
    known = run_epsilons(sigma=config.sigma, q=config.q, steps=config.steps,
                         delta=config.delta) if config.sigma else {}
    audit = audit_scores(scores, members, delta=config.delta, confidence=config.confidence,
                         methods=ONE_RUN_METHODS, seed=config.seed, **known,
                         progress=share(progress, 0.95, 1.0, "audit: "), cancel=cancel)
    metrics = me.evaluate(members, scores, bootstrap=0)
    return NidAuditResult(
        config=config, texts=len(corpus.texts),
        found={name: sum(f.format == name for f in found) for name in formats},
        occurrences=sum(f.copies for f in found), members=len(audited),
        duplicated=sum(f.copies > 1 for f in audited), max_copies=max(f.copies for f in audited),
        identifiers=score_rows(audited, fresh, lengths, logp_target, logp_reference, scores),
        epsilon_lower=audit.epsilon_lower, epsilon_upper=audit.epsilon_upper,
        auroc=metrics.auroc, tpr_at_1pct_fpr=metrics.tpr_at_1pct_fpr, metrics=metrics,
        audit=audit, notes=audit_notes(config, corpus, found, audited, lengths),
        device=str(target().device),
        seconds=time.perf_counter() - started, stopped_early=audit.stopped_early)


def tiny_config() -> NidAuditConfig:
    """20 commits of a git-log-like corpus (``nid_formats.identifier_corpus``) under
    ``home()/tiny``, scored by an untrained tiny GPT-2 (seconds). Its tokenizer learned another
    such corpus (seed 1): one trained on these identifiers would give them fewer tokens."""
    from core import paths
    from core.dp.finetune_data import TINY_TEXTS
    from core.dp.nid_formats import identifier_corpus
    from core.models.tiny import tiny_random_models

    folder = paths.home() / "tiny"
    train, _ = identifier_corpus(TINY_TEXTS, folder / "nid-corpus", commits=20)
    other, _ = identifier_corpus(TINY_TEXTS, folder / "nid-tokenizer", commits=20, seed=1)
    [model] = tiny_random_models(read_texts(str(other)), ("tiny-nid-lm",), vocab_size=400,
                                 n_embd=32, n_positions=128)
    return NidAuditConfig(model=model, corpus=(str(train),), context_tokens=16, device="cpu")


def headline(result: NidAuditResult) -> dict[str, float]:
    """The audited ε, the accountant's when known, the AUROC and the TPR at 1% FPR."""
    known = {} if result.epsilon_upper is None else {"epsilon_upper": result.epsilon_upper}
    return {"epsilon_lower": result.epsilon_lower, "auroc": result.auroc,
            "tpr_at_1pct_fpr": result.tpr_at_1pct_fpr} | known


SPEC = AttackSpec(
    name="nid-audit",
    title="Audit with natural identifiers (post hoc)",
    config_type=NidAuditConfig,
    result_type=NidAuditResult,
    run=run,
    tiny_config=tiny_config,
    headline=headline,
    describe=lambda c: f"NID audit of {c.model}" + (f" against {c.reference}"
                                                     if c.reference.strip() else ""),
    table="identifiers",
    audit=AUDIT,
    cost=dp_costs.nid_audit,
)
