"""Differential score and differential rank between two snapshots of a language model.

Zanella-Béguelin, Tople et al., "Analyzing Privacy Loss in Updates of Natural Language Models"
(arXiv:1912.07942; CCS 2020). For a model M before an update and M' after it, and a token
t_i read after t_<i (Definition 1, a difference of *probabilities*, not of log-probabilities)::

    DS(t_i | t_<i)  = M'(t_<i)(t_i) − M(t_<i)(t_i)
    RDS(t_i | t_<i) = (M'(t_<i)(t_i) − M(t_<i)(t_i)) / M(t_<i)(t_i)  = exp(log M' − log M) − 1
    DS(s) = Σ_i DS(s_i | s_<i),   RDS(s) = Σ_i RDS(s_i | s_<i)

The *differential rank* of s (Definition 2) is the number of sequences of its length with a
higher score. §2.4's beam search approximates it (``core.attacks.diffrank_search``): s's rank
among the sequences the search returns is a lower bound on its true rank; when |V|^L is small
the exact rank is found by enumeration (the paper's two-token count, RQ5). *Group* beam search
(§3.3, RQ4, Tables 3-4) splits the k best first tokens into G groups for a more varied set.
*Prefix knowledge* (RQ3, Figure 1): DS of each token of a phrase given the tokens before it,
the DS of the rest given the first i tokens, and the exact rank of the next token among all
tokens. *Swap*: exchanging the models asks what an update removed (§3.2: "analyzing removal
... requires swapping the roles"). DS/RDS of given texts go through ``core.scoring``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from core.attacks.diffrank_search import (Beams, Expander, Stopped, allowed_tokens, beam_search,
                                          context_of, exhaustive_search, tie_tolerance,
                                          token_scores, widths)
from core.errors import UserError
from core.models import LoadedModel, loaded_models, resolve_model
from core.models.compat import check_same_vocabulary
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import score_token_ids
from core.specs import AttackSpec, check_params, param

EXHAUSTIVE_LIMIT = 2**25          # |V|^L up to this is enumerated for the exact rank
MAX_ROWS = 1000                   # sequences returned at most
BEAM_CHOICES = tuple(2**i for i in range(3, 13))   # the page's beam widths: 8 ... 4096
SAME_TOKENS = "the differential score compares the probabilities of the same tokens"


@dataclass(frozen=True)
class DiffRankConfig:
    """A differential-rank run: two model sources, the search, and an optional phrase."""

    before: str = param("", help="the model before the update: a loaded model's name or a "
                        "source (folder, .zip, .gguf, hub id, named source)")
    after: str = param("", help="the model after the update (same tokenizer as before)")
    length: int = param(4, ge=1, le=32, label="length L (tokens)",
                        help="L: tokens per searched sequence")
    beam: int = param(256, ge=1, le=65536, widget="select_slider", options=BEAM_CHOICES,
                      label="initial beam width k",
                      help="k: width of the length-1 beam, halved at every step: k, k/2, k/4, ...")
    groups: int = param(1, ge=1, le=65536, label="groups G (1: vanilla)",
                        help="group beam search: the k best first tokens in G groups by score, "
                             "each extended on its own (Tables 3-4); at most the beam width")
    relative: bool = param(False, label="rank by RDS",
                           help="rank by the relative increase RDS instead of DS (more robust "
                                "to noise between runs)")
    phrase: str = param("", help="a phrase to score token by token and rank (its first L tokens)")
    swap: bool = param(False, label="swap: what did the update remove?",
                       help="exchange the two models' roles")
    exhaustive_limit: int = param(EXHAUSTIVE_LIMIT, ge=0,
                                  help="enumerate all |V|^L sequences for the exact rank up to "
                                       "this many")

    def __post_init__(self):
        check_params(self)
        for role in ("before", "after"):
            if not getattr(self, role).strip():
                raise UserError(f"choose the model {role} the update (--{role}): a loaded "
                                "model's name or a model source")
        if self.groups > self.beam:
            raise UserError(f"groups must be at most the beam width ({self.beam}), "
                            f"not {self.groups}")

    @property
    def metric(self) -> str:
        return "rds" if self.relative else "ds"


@dataclass
class PhraseReport:
    """A phrase scored token by token, with its prefix knowledge and ranks."""

    text: str
    token_ids: list[int]
    tokens: list[str]
    p_before: list[float]
    p_after: list[float]
    ds_tokens: list[float]        # DS(s_i | s_<i): Figure 1's curve
    rds_tokens: list[float]
    ds: float
    rds: float
    suffix_ds: list[float]        # [i]: DS of s_{i+1..n} given the first i tokens
    next_token_rank: list[int]    # [i]: tokens with a higher score than s_{i+1} after s_≤i (exact)
    ranked_tokens: int            # the first min(n, L) tokens are ranked
    rank: int | None = None       # among the search's sequences: a lower bound on the true rank
    exact_rank: int | None = None  # by enumeration of all |V|^L sequences, when small enough
    exact_space: int | None = None


@dataclass
class FoundSequence:
    """One sequence the search returned, rescored by the scoring engine."""

    rank: int                     # 0: the highest score
    phrase: str
    ds: float
    rds: float
    group: int                    # 1..G
    tokens: list[str]
    token_ids: list[int]


@dataclass
class DiffRankResult:
    config: DiffRankConfig
    before: str                   # the roles actually used (exchanged by swap)
    after: str
    metric: str                   # "ds" or "rds": what the search ranks by
    rows: list[FoundSequence]
    phrase: PhraseReport | None
    widths: list[int]
    vocabulary: int               # tokens that may extend a sequence
    extensions_scored: int
    seconds: float
    device: str
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- models and phrases


def check_pair(before: LoadedModel, after: LoadedModel) -> None:
    """``UserError`` unless both models read text with the same vocabulary."""
    check_same_vocabulary(before, after, why=SAME_TOKENS)


def load_pair(config: DiffRankConfig) -> tuple[LoadedModel, LoadedModel]:
    """The (before, after) models, exchanged when ``config.swap``; same tokenizer checked."""
    before, after = resolve_model(config.before), resolve_model(config.after)
    if config.swap:
        before, after = after, before
    check_pair(before, after)
    return before, after


def score_phrases(before: LoadedModel, after: LoadedModel, phrases: list[list[int]]) -> list[dict]:
    """p_before, p_after, DS and RDS of each token of each token-id phrase (scoring engine)."""
    out = []
    for sb, sa in zip(score_token_ids(before, phrases), score_token_ids(after, phrases)):
        lb, la = np.asarray(sb.logprobs, np.float64), np.asarray(sa.logprobs, np.float64)
        out.append({"p_before": np.exp(lb), "p_after": np.exp(la), "ds": np.exp(la) - np.exp(lb),
                    "rds": np.expm1(la - lb)})
    return out


def _decode(lm: LoadedModel, ids) -> str:
    return lm.tokenizer.decode([int(i) for i in ids])


def prefix_knowledge(before: LoadedModel, after: LoadedModel, token_ids: list[int], *,
                     relative: bool = False) -> list[int]:
    """Exact rank of each token of the phrase among all tokens, given the tokens before it."""
    ids = torch.tensor([context_of(before) + list(token_ids[:-1])])
    with torch.inference_mode():
        logs = [torch.log_softmax(lm.model(input_ids=ids.to(lm.device), attention_mask=torch.ones_like(
            ids, device=lm.device)).logits[0].float(), -1).cpu() for lm in (before, after)]
    scores = token_scores(logs[1], logs[0], relative)
    scores[:, ~allowed_tokens(before)[: scores.shape[1]]] = -torch.inf
    target = scores.gather(1, torch.tensor(token_ids).unsqueeze(1))
    return (scores > target + tie_tolerance(before)).sum(1).tolist()


def analyse_phrase(before: LoadedModel, after: LoadedModel, text: str, *,
                   relative: bool = False) -> PhraseReport:
    """DS/RDS of ``text`` token by token, and its prefix knowledge (RQ3, Figure 1)."""
    ids = before.tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError("the phrase is empty: type the text whose differential score you want")
    if len(ids) >= before.card.context_length:
        raise UserError(f"the phrase has {len(ids)} tokens, more than {before.name}'s context "
                        f"({before.card.context_length}) allows: shorten it")
    scores = score_phrases(before, after, [ids])[0]
    ds = scores["ds"]
    return PhraseReport(
        text=text, token_ids=list(ids), tokens=[_decode(before, [i]) for i in ids],
        p_before=scores["p_before"].tolist(), p_after=scores["p_after"].tolist(),
        ds_tokens=ds.tolist(), rds_tokens=scores["rds"].tolist(), ds=float(ds.sum()),
        rds=float(scores["rds"].sum()), suffix_ds=[float(ds[i:].sum()) for i in range(len(ds))],
        next_token_rank=prefix_knowledge(before, after, ids, relative=relative),
        ranked_tokens=0)


# ---------------------------------------------------------------- the attack


def _rows(before: LoadedModel, after: LoadedModel, found: list[Beams]) -> list[FoundSequence]:
    """The found sequences, best first, with DS and RDS from the scoring engine."""
    seqs = [(float(s), t.tolist(), b.group) for b in found for s, t in zip(b.scores, b.tokens)]
    seqs.sort(key=lambda x: -x[0])
    seqs = seqs[:MAX_ROWS]
    scores = score_phrases(before, after, [ids for _, ids, _ in seqs])
    return [FoundSequence(rank=rank, phrase=_decode(before, ids), ds=float(sc["ds"].sum()),
                          rds=float(sc["rds"].sum()), group=group + 1,
                          tokens=[_decode(before, [i]) for i in ids], token_ids=ids)
            for rank, ((_, ids, group), sc) in enumerate(zip(seqs, scores))]


def run(config: DiffRankConfig, *, progress: Progress = no_progress,
        cancel: threading.Event | None = None) -> DiffRankResult:
    """Search the sequences whose score rose most, and score/rank ``config.phrase``."""
    began = time.perf_counter()
    check_cancel(cancel)
    progress(0.0, "loading the models")
    before, after = load_pair(config)
    if config.length >= before.card.context_length:
        raise UserError(f"length {config.length} does not fit {before.name}'s context "
                        f"({before.card.context_length} tokens)")
    notes: list[str] = []
    report = analyse_phrase(before, after, config.phrase, relative=config.relative) \
        if config.phrase.strip() else None
    expander = Expander(before, after, config.relative, cancel)
    found, stopped = beam_search(expander, beam=config.beam, length=config.length,
                                 groups=config.groups, progress=progress)
    rows = _rows(before, after, found)
    extensions = expander.extensions
    if report is not None:
        _rank_phrase(report, rows, config, expander, tolerance=tie_tolerance(before), notes=notes)
    if stopped:
        notes.append("stopped early: the sequences are the best of the last finished step")
    progress(1.0, "done")
    return DiffRankResult(
        config=config, before=before.source, after=after.source, metric=config.metric, rows=rows,
        phrase=report, widths=widths(config.beam, config.length),
        vocabulary=int(expander.allowed.sum()), extensions_scored=extensions,
        seconds=time.perf_counter() - began, device=str(before.device), stopped_early=stopped,
        notes=notes)


def _rank_phrase(report: PhraseReport, rows: list[FoundSequence], config: DiffRankConfig,
                 expander: Expander, *, tolerance: float, notes: list[str]) -> None:
    """Rank the phrase's first L tokens among the found rows and, when small, among all."""
    length = config.length
    if len(report.token_ids) < length:
        notes.append(f"the phrase has {len(report.token_ids)} tokens, fewer than the searched "
                     f"length {length}: it is scored but not ranked")
        return
    report.ranked_tokens = length
    per_token = report.rds_tokens if config.relative else report.ds_tokens
    target = float(np.sum(per_token[:length]))
    report.rank = sum(getattr(row, config.metric) > target + tolerance for row in rows)
    space = int(expander.allowed.sum()) ** length
    report.exact_space = space
    if space > config.exhaustive_limit:
        notes.append(f"exact rank not computed: |V|^L = {space:.3g} sequences exceed the "
                     f"enumeration limit {config.exhaustive_limit:.3g} (shorten the length)")
        return
    if not all(expander.allowed[report.token_ids[:length]]):
        notes.append("the phrase holds a special token, never searched: no exact rank")
        return
    try:
        report.exact_rank = exhaustive_search(expander, length, top=1, above=target + tolerance).n_above
    except Stopped:
        notes.append("cancelled before the exact rank was counted")


# ---------------------------------------------------------------- the spec


def describe(config: DiffRankConfig) -> str:
    """A run's one-line title."""
    roles = f"{config.before} → {config.after}" + (" (swapped)" if config.swap else "")
    return f"differential rank {roles}, L={config.length}, k={config.beam}, G={config.groups}"


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
    """Whether a model of the run is on the GPU: a loaded one's device, else where "auto" loads."""
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
                          phrase="Zealous penguins")


SPEC = AttackSpec(
    name="diffrank",
    title="Differential rank between two model snapshots",
    kind="privacy",
    config_type=DiffRankConfig,
    result_type=DiffRankResult,
    run=run,
    tiny_config=tiny_config,
    uses_gpu=uses_gpu,
    headline=headline,
    describe=describe,
)
