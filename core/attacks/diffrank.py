"""Differential score and differential rank between two snapshots of a language model.

Zanella-Béguelin, Tople et al., "Analyzing Privacy Loss in Updates of Natural Language Models"
(arXiv:1912.07942; CCS 2020). For a model M before an update and M' after it, and a token
t_i read after t_<i (Definition 1, a difference of *probabilities*, not of log-probabilities)::

    DS(t_i | t_<i)  = M'(t_<i)(t_i) − M(t_<i)(t_i)
    RDS(t_i | t_<i) = (M'(t_<i)(t_i) − M(t_<i)(t_i)) / M(t_<i)(t_i)  = exp(log M' − log M) − 1
    DS(s) = Σ_i DS(s_i | s_<i),   RDS(s) = Σ_i RDS(s_i | s_<i)

The *differential rank* of s (Definition 2) is the number of sequences of its length with a
higher score. §2.4's beam search approximates it: the beam of length-1 sequences has width k,
halved at every extension; every step scores all single-token extensions of all beams under
both models (batched, with the KV cache). s's rank among the sequences the search returns is a
lower bound on its true rank; when |V|^L is small the exact rank is found by enumeration (the
paper's two-token count, RQ5). *Group* beam search (§3.3, RQ4, Tables 3-4): the k best first
tokens are split by score into G groups, each extended by its own beam search (width k/G
halved), for a more varied set. *Prefix knowledge* (RQ3, Figure 1): DS of each token of a
phrase given the tokens before it, the DS of the rest given the first i tokens, and the exact
rank of the next token among all tokens. *Swap*: exchanging the models asks what an update
removed (§3.2: "analyzing removal ... requires swapping the roles").

Every sequence is read after the scoring engine's context token (``<|endoftext|>``/BOS), so
the first token is scored too; special tokens are never used as extensions. DS/RDS of given
texts go through ``core.scoring``; the search reads whole next-token distributions itself.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import DynamicCache

from core import paths
from core.runtime import Progress, check_cancel, is_cancelled, no_progress
from core.specs import AttackSpec
from core.errors import UserError
from core.runtime import Cancelled
from core.models import LoadedModel, resolve_model
from core.scoring import context_ids, score_token_ids

EXHAUSTIVE_LIMIT = 2**25          # |V|^L up to this is enumerated for the exact rank
LOGITS_BUDGET = 2**23             # next-token scores per forward chunk (rows × vocabulary)
MAX_ROWS = 1000                   # sequences returned at most


@dataclass(frozen=True)
class DiffRankConfig:
    """A differential-rank run: two model sources, the search, and an optional phrase."""

    before: str = "demo:base"
    after: str = "demo:updated"
    length: int = 4               # L: tokens per searched sequence
    beam: int = 256               # k: width of the length-1 beam, halved at every extension
    groups: int = 1               # G: 1 is vanilla beam search
    relative: bool = False        # rank by RDS instead of DS
    phrase: str = ""              # scored token by token, ranked (its first L tokens)
    swap: bool = False            # exchange before and after: what did the update remove?
    exhaustive_limit: int = EXHAUSTIVE_LIMIT

    def __post_init__(self):
        if not self.before.strip() or not self.after.strip():
            raise UserError("give both models: --before (the snapshot before the update) and --after")
        if not isinstance(self.length, int) or not 1 <= self.length <= 32:
            raise UserError(f"length must be a whole number of tokens in 1..32, not {self.length!r}")
        if not isinstance(self.beam, int) or not 1 <= self.beam <= 65536:
            raise UserError(f"beam width must be a whole number in 1..65536, not {self.beam!r}")
        if not isinstance(self.groups, int) or not 1 <= self.groups <= self.beam:
            raise UserError(f"groups must be a whole number in 1..beam width ({self.beam}), "
                            f"not {self.groups!r}")
        if self.exhaustive_limit < 0:
            raise UserError("exhaustive_limit must be >= 0")

    def title(self) -> str:
        """A run's one-line title."""
        roles = f"{self.before} → {self.after}" + (" (swapped)" if self.swap else "")
        return f"differential rank {roles}, L={self.length}, k={self.beam}, G={self.groups}"

    @property
    def metric(self) -> str:
        return "rds" if self.relative else "ds"

    def widths(self, group_size: int) -> list[int]:
        """Beam width after each of the L steps: the group's size, halved at every step."""
        return [max(1, group_size >> i) for i in range(self.length)]


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
class DiffRankResult:
    config: DiffRankConfig
    before: str                   # the roles actually used (exchanged by swap)
    after: str
    metric: str                   # "ds" or "rds": what the search ranks by
    rows: list[dict]              # rank, phrase, ds, rds, group, tokens, token_ids
    phrase: PhraseReport | None
    widths: list[int]
    vocabulary: int               # tokens that may extend a sequence
    extensions_scored: int
    seconds: float
    device: str
    stopped_early: bool = False
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- models and phrases


def check_same_tokenizer(before: LoadedModel, after: LoadedModel) -> None:
    """``UserError`` unless both models read text with the same vocabulary."""
    vb, va = before.tokenizer.get_vocab(), after.tokenizer.get_vocab()
    if vb != va:
        only = len(set(vb) ^ set(va))
        raise UserError(
            f"the two models use different tokenizers ({before.name}: {len(vb)} tokens, "
            f"{after.name}: {len(va)} tokens, {only} tokens in one only{'' if only else ', ids differ'}): "
            "the differential score compares the probabilities of the same tokens, so pick two "
            "snapshots of one model (same tokenizer)")


def _allowed_tokens(lm: LoadedModel) -> torch.Tensor:
    """Boolean mask over the output vocabulary: real, non-special tokens."""
    size = lm.model.get_output_embeddings().weight.shape[0]
    allowed = torch.zeros(size, dtype=torch.bool)
    allowed[: min(size, len(lm.tokenizer))] = True
    added = getattr(lm.tokenizer, "added_tokens_decoder", {})
    special = {i for i in lm.tokenizer.all_special_ids if i is not None}
    special = [i for i in special | {i for i, t in added.items() if t.special} if i < size]
    allowed[special] = False
    return allowed


def _context(lm: LoadedModel) -> list[int]:
    context = context_ids(lm.tokenizer)
    if not context:
        raise UserError(f"{lm.name}'s tokenizer has no BOS, EOS or <|endoftext|> token to read "
                        "the first token after, so differential scores cannot start")
    return context


def _token_scores(log_after: torch.Tensor, log_before: torch.Tensor, relative: bool) -> torch.Tensor:
    """DS or RDS of every token from the two models' log-probabilities (float64)."""
    if relative:
        return torch.expm1(log_after.double() - log_before.double())
    return log_after.double().exp() - log_before.double().exp()


def _tolerance(lm: LoadedModel) -> float:
    """Scores this close count as ties (float32 ~1e-7 per token; half precision far more)."""
    return 1e-5 if next(lm.model.parameters()).dtype == torch.float32 else 2e-2


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
    context = _context(before)
    ids = torch.tensor([context + list(token_ids[:-1])])
    with torch.inference_mode():
        logs = [torch.log_softmax(lm.model(input_ids=ids.to(lm.device), attention_mask=torch.ones_like(
            ids, device=lm.device)).logits[0].float(), -1).cpu() for lm in (before, after)]
    scores = _token_scores(logs[1], logs[0], relative)
    scores[:, ~_allowed_tokens(before)[: scores.shape[1]]] = -torch.inf
    target = scores.gather(1, torch.tensor(token_ids).unsqueeze(1))
    return (scores > target + _tolerance(before)).sum(1).tolist()


# ---------------------------------------------------------------- the search


@dataclass
class _Beams:
    """Same-length sequences, their scores, and each model's KV cache of all but ``pending``."""

    tokens: torch.Tensor          # (n, i) searched tokens
    scores: torch.Tensor          # (n,) float64 cumulative score
    pending: torch.Tensor         # (n, m) tokens not yet in the caches
    caches: list[list[tuple[torch.Tensor, torch.Tensor]] | None]  # per model, per layer (K, V)
    group: int = 0
    n_above: int = 0              # extensions that scored above ``step``'s threshold


class _Stopped(Exception):
    """The cancel event was set in the middle of a step."""


class Expander:
    """Scores every single-token extension of many beams under both models, with the KV cache.

    ``extensions`` counts the (sequence, token) pairs scored, ``rows`` the beams expanded.
    """

    def __init__(self, before: LoadedModel, after: LoadedModel, relative: bool,
                 cancel: threading.Event | None = None):
        self.models = (before, after)
        self.relative = relative
        self.cancel = cancel
        self.allowed = _allowed_tokens(before)
        self.extensions = 0
        self.rows = 0

    def start(self, prefix: list[int] = ()) -> _Beams:
        """One beam: the context token (and ``prefix``), nothing searched yet."""
        pending = torch.tensor([_context(self.models[0]) + list(prefix)])
        return _Beams(torch.zeros((1, 0), dtype=torch.long), torch.zeros(1, dtype=torch.float64),
                      pending, [None, None])

    @staticmethod
    def _forward(lm: LoadedModel, cache, rows: slice, pending: torch.Tensor):
        """Next-token log-probs of ``rows``, and their caches extended by ``pending``."""
        kv, past = None, 0
        if cache is not None:
            kv = DynamicCache()
            for layer, (k, v) in enumerate(cache):
                kv.update(k[rows], v[rows], layer)
            past = cache[0][0].shape[2]
        ids = pending[rows].to(lm.device)
        mask = torch.ones((ids.shape[0], past + ids.shape[1]), dtype=torch.long, device=lm.device)
        out = lm.model(input_ids=ids, attention_mask=mask, past_key_values=kv, use_cache=True)
        logs = torch.log_softmax(out.logits[:, -1].float(), -1).cpu()
        return logs, [(layer.keys, layer.values) for layer in out.past_key_values.layers]

    def expand(self, beams: _Beams):
        """Yield (first row, candidate scores (rows, V), the rows' extended caches) per chunk."""
        vocab = len(self.allowed)
        chunk = max(1, LOGITS_BUDGET // vocab)
        with torch.inference_mode():
            for start in range(0, len(beams.scores), chunk):
                if is_cancelled(self.cancel):
                    raise _Stopped()
                rows = slice(start, start + chunk)
                (lb, cb), (la, ca) = (self._forward(lm, cache, rows, beams.pending)
                                      for lm, cache in zip(self.models, beams.caches))
                scores = _token_scores(la[:, :vocab], lb[:, :vocab], self.relative)
                scores[:, ~self.allowed] = -torch.inf
                self.rows += len(scores)
                self.extensions += len(scores) * int(self.allowed.sum())
                yield start, beams.scores[rows, None] + scores, (cb, ca)

    def step(self, beams: _Beams, width: int | None, above: float = torch.inf) -> _Beams:
        """The ``width`` best one-token extensions of ``beams`` (all of them when None);
        the result's ``n_above`` counts the extensions that scored above ``above``."""
        vocab = len(self.allowed)
        best, index = torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long)
        parts, n_above = [], 0
        for start, cand, caches in self.expand(beams):
            parts.append(caches)
            n_above += int((cand > above).sum())
            flat = cand.reshape(-1)
            keep = torch.isfinite(flat)
            best = torch.cat([best, flat[keep]])
            index = torch.cat([index, (torch.arange(flat.numel()) + start * vocab)[keep]])
            if width is not None and len(best) > width:
                top = torch.topk(best, width)
                best, index = top.values, index[top.indices]
        order = torch.argsort(best, descending=True, stable=True)
        best, index = best[order], index[order]
        parent, token = index // vocab, index % vocab
        caches = [_gather([p[m] for p in parts], parent) for m in (0, 1)]
        return _Beams(torch.cat([beams.tokens[parent], token[:, None]], 1), best,
                      token[:, None], caches, beams.group, n_above)


def _gather(chunks: list[list[tuple[torch.Tensor, torch.Tensor]]], rows: torch.Tensor):
    """Per layer (K, V) of the chunks put together, then the given ``rows`` taken."""
    return [tuple(torch.cat(parts)[rows.to(parts[0].device)] for parts in zip(*layer))
            for layer in zip(*chunks)]


def _select(beams: _Beams, rows: slice, group: int) -> _Beams:
    caches = [None if c is None else [(k[rows], v[rows]) for k, v in c] for c in beams.caches]
    return _Beams(beams.tokens[rows], beams.scores[rows], beams.pending[rows], caches, group)


def beam_search(expander: Expander, config: DiffRankConfig,
                progress: Progress = no_progress) -> tuple[list[_Beams], bool]:
    """§2.4 beam search (G = 1) or §3.3 group beam search.

    Returns each group's final beams and whether the search was stopped early (then the
    unfinished group's beams are those of its last finished step, shorter than L).
    """
    size = -(-config.beam // config.groups)  # each group: k/G first tokens, width k/G halved
    planned = 1 + config.groups * sum(config.widths(size)[:-1])
    tokenizer = expander.models[0].tokenizer

    def report(beams: _Beams) -> None:
        length = beams.tokens.shape[1]
        progress(min(1.0, expander.rows / planned),
                 f"group {beams.group + 1} of {config.groups}: length {length} of {config.length}",
                 {"best": tokenizer.decode(beams.tokens[0].tolist()) if len(beams.scores) else ""})

    try:
        first = expander.step(expander.start(), config.beam)
    except _Stopped:
        raise Cancelled("differential rank search cancelled before its first step") from None
    groups = [_select(first, slice(g * size, (g + 1) * size), g) for g in range(config.groups)]
    done: list[_Beams] = []
    for beams in (g for g in groups if len(g.scores)):
        report(beams)
        try:
            for width in config.widths(size)[1:]:
                beams = expander.step(beams, width)
                report(beams)
        except _Stopped:
            return done + [beams], True
        done.append(beams)
    return done, False


def exhaustive_search(expander: Expander, length: int, *, top: int = 10,
                      above: float = torch.inf) -> _Beams:
    """All |V|^length sequences: the ``top`` best (``n_above``: how many score above ``above``)."""
    beams = expander.start()
    for _ in range(length - 1):
        beams = expander.step(beams, None)
    return expander.step(beams, top, above)


# ---------------------------------------------------------------- the attack


def load_pair(config: DiffRankConfig) -> tuple[LoadedModel, LoadedModel]:
    """The (before, after) models, exchanged when ``config.swap``; same tokenizer checked."""
    before, after = resolve_model(config.before), resolve_model(config.after)
    if config.swap:
        before, after = after, before
    check_same_tokenizer(before, after)
    return before, after


def _rows(before: LoadedModel, after: LoadedModel, found: list[_Beams]) -> list[dict]:
    """The found sequences, best first, with DS and RDS from the scoring engine."""
    seqs = [(float(s), t.tolist(), b.group) for b in found for s, t in zip(b.scores, b.tokens)]
    seqs.sort(key=lambda x: -x[0])
    seqs = seqs[:MAX_ROWS]
    scores = score_phrases(before, after, [ids for _, ids, _ in seqs])
    return [{"rank": rank, "phrase": _decode(before, ids), "ds": float(sc["ds"].sum()),
             "rds": float(sc["rds"].sum()), "group": group + 1,
             "tokens": [_decode(before, [i]) for i in ids], "token_ids": ids}
            for rank, ((_, ids, group), sc) in enumerate(zip(seqs, scores))]


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
    found, stopped = beam_search(expander, config, progress)
    rows = _rows(before, after, found)
    extensions = expander.extensions
    if report is not None:
        _rank_phrase(report, rows, config, expander, tolerance=_tolerance(before), notes=notes)
    if stopped:
        notes.append("stopped early: the sequences are the best of the last finished step")
    progress(1.0, "done")
    return DiffRankResult(
        config=config, before=before.source, after=after.source, metric=config.metric, rows=rows,
        phrase=report, widths=config.widths(config.beam), vocabulary=int(expander.allowed.sum()),
        extensions_scored=extensions, seconds=time.perf_counter() - began,
        device=str(before.device), stopped_early=stopped, notes=notes)


def _rank_phrase(report: PhraseReport, rows: list[dict], config: DiffRankConfig,
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
    report.rank = sum(row[config.metric] > target + tolerance for row in rows)
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
    except _Stopped:
        notes.append("cancelled before the exact rank was counted")


def tiny_models() -> tuple[str, str]:
    """Two tiny GPT-2 folders sharing a tokenizer (made once under the lab home, seconds)."""
    from core.models.tiny import tiny_random_models

    texts = ["To be, or not to be, that is the question.",
             "Zealous penguins quietly juggle turquoise kettles."] * 8
    before, after = tiny_random_models(paths.home() / "tiny" / "diffrank", texts, ("before", "after"))
    return before, after


def tiny_config() -> DiffRankConfig:
    before, after = tiny_models()
    return DiffRankConfig(before=before, after=after, length=3, beam=16, groups=2,
                          phrase="Zealous penguins")


SPEC = AttackSpec(
    name="diffrank",
    title="Differential rank between two model snapshots",
    kind="privacy",
    config_type=DiffRankConfig,
    run=run,
    tiny_config=tiny_config,
)
