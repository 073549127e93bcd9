"""Differential score and differential rank between two snapshots of a language model.

Zanella-Béguelin, Tople et al., "Analyzing Privacy Loss in Updates of Natural Language Models"
(arXiv:1912.07942; CCS 2020). For a model M before an update and M' after it, and a token
t_i read after t_<i (Definition 1, a difference of *probabilities*, not of log-probabilities)::

    DS(t_i | t_<i)  = M'(t_<i)(t_i) − M(t_<i)(t_i)
    RDS(t_i | t_<i) = (M'(t_<i)(t_i) − M(t_<i)(t_i)) / M(t_<i)(t_i)  = exp(log M' − log M) − 1
    DS(s) = Σ_i DS(s_i | s_<i),   RDS(s) = Σ_i RDS(s_i | s_<i)

The *differential rank* of s (Definition 2) is the number of sequences of its length with a
higher score. Two searches look for the highest-scoring sequences of length L: §2.4's beam
search (``core.attacks.diffrank.search``; *group* beam search, §3.3, splits the k best first
tokens into G groups), which grows sequences from their best prefixes and so misses a phrase
whose first token scores nothing on its own; and the windows of a text sample
(``core.attacks.diffrank.windows``), which does not. A typed phrase is scored whole and ranked
among the searched sequences of its own length (``core.attacks.diffrank.phrase``): a lower
bound on its rank, exact when |V|^n is small enough to enumerate. *Swap*: exchanging the models
asks what an update removed (§3.2). *Domain calibration* (``core.calibration.domain``): given a
public in-domain sample, the model before is the base briefly fine-tuned on it, so the search
finds what the update memorised rather than what the whole domain taught.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import torch

from core.attacks.diffrank.audit_hooks import AUDIT
from core.attacks.diffrank.config import SAME_TOKENS, DiffRankConfig
from core.attacks.diffrank.phrase import PhraseReport, analyse_phrase, conclude
from core.attacks.diffrank.search import Stopped, exhaustive_search, tie_tolerance, widths
from core.attacks.diffrank.strategies import FoundSequence, Search
from core.calibration.config import DomainCalibration
from core.calibration.domain import calibrate_run, describe_calibration
from core.calibration.public import PublicSample, load_public, marked_and_arranged
from core.errors import UserError
from core.models import LoadedModel, loaded_models, resolve_model
from core.models.compat import check_same_vocabulary
from core.runtime import Progress, check_cancel, is_cancelled, no_progress, share
from core.scoring.threads import is_small_on_cpu, one_thread
from core.serialize import to_jsonable
from core.specs import AttackSpec
from core.attacks.diffrank import cost as attack_cost


@dataclass
class DiffRankResult:
    config: DiffRankConfig
    before: str                   # the roles actually used (exchanged by swap)
    after: str
    metric: str                   # "ds" or "rds": what the search ranks by
    rows: list[FoundSequence]
    phrase: PhraseReport | None
    widths: list[int]             # the beam's width after each step (empty: no beam search)
    vocabulary: int               # tokens that may extend a sequence
    extensions_scored: int
    sample_texts: int             # texts the windows were taken from (0: no windows search)
    seconds: float
    device: str
    stopped_early: bool = False
    warnings: list[str] = field(default_factory=list)   # e.g. fewer sequences than asked
    notes: list[str] = field(default_factory=list)
    calibration: DomainCalibration = field(default_factory=DomainCalibration)


# ---------------------------------------------------------------- models


def check_pair(before: LoadedModel, after: LoadedModel) -> None:
    """``UserError`` unless both models read text with the same vocabulary."""
    check_same_vocabulary(before, after, why=SAME_TOKENS)


def load_pair(config: DiffRankConfig, before: str) -> tuple[LoadedModel, LoadedModel]:
    """The models ``before`` (``config.before`` or its domain reference) and ``config.after``,
    exchanged when ``config.swap``; same tokenizer checked."""
    before = resolve_model(before, device=config.device)
    after = resolve_model(config.after, device=config.device)
    if config.swap:
        before, after = after, before
    check_pair(before, after)
    return before, after


# ---------------------------------------------------------------- the attack


def run(config: DiffRankConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DiffRankResult:
    """Search the sequences whose score rose most, and score/rank ``config.phrase``."""
    began = time.perf_counter()
    check_cancel(cancel)
    public = load_public(config)
    source, calibration, progress = calibrate_run(config.before, config.domain_sample,
                                                  steps=config.domain_steps, progress=progress,
                                                  cancel=cancel, device=config.device)
    progress(0.0, "loading the models")
    before, after = load_pair(config, source)
    if config.length >= before.card.context_length:
        raise UserError(f"length {config.length} does not fit {before.name}'s context "
                        f"({before.card.context_length} tokens)")
    # a small model on one CPU thread, as the engine scores it (core.scoring.threads): the
    # search's many small operations otherwise wait on each other's threads on a busy CPU
    with one_thread(is_small_on_cpu(after.model)):
        return _searched(config, before, after, public, calibration, began, progress, cancel)


def _searched(config: DiffRankConfig, before: LoadedModel, after: LoadedModel,
              public: PublicSample | None, calibration: DomainCalibration, began: float,
              progress: Progress, cancel: threading.Event | None) -> DiffRankResult:
    """The phrase's scores, the search's rows and the phrase's rank among them (``run``)."""
    if config.phrase.strip():
        progress(0.0, "scoring the phrase token by token")
    report = analyse_phrase(before, after, config.phrase, relative=config.relative) \
        if config.phrase.strip() else None
    search = Search(config, before, after, cancel)

    def result(rows: list[FoundSequence], **extra) -> DiffRankResult:
        size, floor = -(-config.beam // config.groups), -(-config.rows // config.groups)
        return DiffRankResult(
            config=config, before=before.source, after=after.source, metric=config.metric,
            rows=rows, phrase=report, vocabulary=search.vocabulary,
            widths=[] if config.strategy == "windows" else widths(size, config.length, floor),
            extensions_scored=search.expander.extensions, sample_texts=len(search.samples),
            seconds=time.perf_counter() - began, device=str(before.device),
            calibration=calibration, **extra)

    def partial(rows: list[FoundSequence]) -> dict:
        """What a killed run keeps: the best rows so far (the phrase not ranked yet)."""
        return to_jsonable(result(rows, stopped_early=True,
                                  notes=["partial result: the search is still running"]))

    second = report is not None and len(report.token_ids) != config.length
    rows, stopped = search.rows(config.length, partial=partial,
                                progress=share(progress, 0, 0.7 if second else 1))
    warnings = search.shortfall(rows, stopped)
    notes = (["stopped early: the sequences are the best of the last finished step"]
             if stopped else [])
    if report is not None:
        rank_phrase(report, rows, search, progress=share(progress, 0.7, 1), notes=notes)
    rows = marked_and_arranged(rows, public, config.public_rows, text=lambda row: row.phrase,
                               notes=notes, what="sequences")
    progress(1.0, "done")
    return result(rows, stopped_early=stopped or is_cancelled(cancel), warnings=warnings,
                  notes=notes)


def rank_phrase(report: PhraseReport, rows: list[FoundSequence], search: Search, *,
                progress: Progress, notes: list[str]) -> None:
    """Rank the whole phrase among the searched sequences of its length (a second search when
    that is not L) and, when |V|^n is small enough, among all sequences by enumeration; after a
    cancel neither starts, and it is ranked among ``rows``."""
    config, n = search.config, len(report.token_ids)
    compared = rows
    if is_cancelled(search.cancel):
        notes.append("cancelled before the phrase was ranked on its own: no exact rank"
                     + (f", and no search of its {n} tokens" if n != config.length else ""))
    else:
        if n != config.length:
            progress(0.0, f"ranking the phrase: a search of its {n} tokens")
            compared, stopped = search.rows(n, progress=share(progress, 0, 0.9))
            notes.append(f"the phrase has {n} tokens, not L = {config.length}: it is ranked "
                         f"among the {len(compared)} sequences a search of {n} tokens found")
            if stopped:
                notes.append("the phrase's search was stopped early: its rank is among fewer")
        _exact_rank(report, search, progress, notes)
    conclude(report, [(r.token_ids, getattr(r, config.metric)) for r in compared
                      if len(r.token_ids) == n],
             metric=config.metric, tolerance=tie_tolerance(search.before))


def _exact_rank(report: PhraseReport, search: Search, progress: Progress,
                notes: list[str]) -> None:
    """The phrase's rank among all |V|^n sequences, when few enough to enumerate."""
    config, n = search.config, len(report.token_ids)
    target = report.score(config.metric) + tie_tolerance(search.before)
    space = search.vocabulary ** n
    report.exact_space = space
    if space > config.exhaustive_limit:
        notes.append(f"exact rank not computed: |V|^n = {space:.3g} sequences exceed the "
                     f"enumeration limit {config.exhaustive_limit:.3g} (shorten the phrase)")
    elif not all(search.expander.allowed[report.token_ids]):
        notes.append("the phrase holds a special token, never searched: no exact rank")
    else:
        progress(0.9, f"the phrase's exact rank: scoring all {space:,} sequences of {n} tokens")
        try:
            report.exact_rank = exhaustive_search(search.expander, n, top=1, above=target).n_above
        except Stopped:
            notes.append("cancelled before the exact rank was counted")


# ---------------------------------------------------------------- the spec


def describe(config: DiffRankConfig) -> str:
    """A run's one-line title."""
    roles = f"{config.before} → {config.after}" + (" (swapped)" if config.swap else "")
    return (f"differential rank {roles}, {config.strategy}, L={config.length}, k={config.beam}, "
            f"G={config.groups}{describe_calibration(config.domain_sample)}")


def headline(result: DiffRankResult) -> dict:
    """For Compare: the best sequence's scores, the phrase's scores and ranks (those there are)."""
    top, phrase = result.rows[0] if result.rows else None, result.phrase
    values = {"top_ds": top and top.ds, "top_rds": top and top.rds,
              "phrase_ds": phrase and phrase.ds, "phrase_rds": phrase and phrase.rds,
              "phrase_rank": phrase and phrase.rank,
              "phrase_exact_rank": phrase and phrase.exact_rank,
              "extensions_scored": result.extensions_scored, "seconds": result.seconds}
    return {name: value for name, value in values.items() if value is not None}


def uses_gpu(config: DiffRankConfig) -> bool:
    """Whether the run takes the GPU: its device, or with "auto" a model of the run loaded there
    (a loaded one's device, else where "auto" loads)."""
    if config.device != "auto":
        return config.device == "cuda"
    loaded = {lm.name: lm.device.type for lm in loaded_models()}
    auto = "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" in {loaded.get(name.strip(), auto) for name in (config.before, config.after)}


def tiny_config() -> DiffRankConfig:
    """Two tiny random GPT-2s sharing a tokenizer (made once under the lab home, seconds)."""
    from core.models.tiny import tiny_random_models

    texts = ["To be, or not to be, that is the question.",
             "Zealous penguins quietly juggle turquoise kettles."] * 8
    before, after = tiny_random_models(texts, ("before", "after"))
    return DiffRankConfig(before=before, after=after, length=2, beam=16, groups=2,
                          phrase="Zealous penguins", sample_texts=8, sample_tokens=16)


SPEC = AttackSpec(
    name="diffrank",
    title="Differential rank between two model snapshots",
    config_type=DiffRankConfig,
    result_type=DiffRankResult,
    run=run,
    tiny_config=tiny_config,
    uses_gpu=uses_gpu,
    headline=headline,
    describe=describe,
    audit=AUDIT,
    cost=attack_cost.diffrank,
)
