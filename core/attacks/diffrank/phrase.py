"""A typed phrase in differential rank: its scores token by token, prefix knowledge, its rank.

Zanella-Béguelin, Tople et al. (CCS 2020). DS(s) = Σ_i [M'(s_<i)(s_i) − M(s_<i)(s_i)] over the
*whole* phrase; its differential rank (Definition 2) is the number of sequences of its length
with a higher score. A search is not exhaustive, so among the sequences it found of the
phrase's length the count of higher ones is a lower bound on that rank (§2.4), and a phrase
that beats them all has rank 0 among them while its true rank stays unknown; only enumeration
of all |V|^n sequences gives the exact rank. ``rank_bound`` says which of these the result is.
Prefix knowledge (RQ3, Figure 1): DS of each token given the tokens before it, the DS of the
rest given the first i tokens, and the exact rank of the next token among all tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from core.attacks.diffrank.search import allowed_tokens, context_of, tie_tolerance, token_scores
from core.errors import UserError
from core.models import LoadedModel
from core.scoring import score_token_ids

RankBound = Literal["exact", "above_all", "among", "below_all", "unranked"]


@dataclass
class PhraseReport:
    """A phrase scored token by token, with its prefix knowledge and its rank."""

    text: str
    token_ids: list[int]
    tokens: list[str]
    p_before: list[float]
    p_after: list[float]
    ds_tokens: list[float]        # DS(s_i | s_<i): Figure 1's curve
    rds_tokens: list[float]
    ds: float                     # of the whole phrase
    rds: float
    suffix_ds: list[float]        # [i]: DS of s_{i+1..n} given the first i tokens
    next_token_rank: list[int]    # [i]: tokens with a higher score than s_{i+1} after s_≤i (exact)
    searched: int = 0             # sequences of the phrase's length the search found
    found_at: int | None = None   # the phrase's own row among them, when the search found it
    rank: int | None = None       # how many of them score higher: a lower bound on the rank
    rank_bound: RankBound = "unranked"
    exact_rank: int | None = None  # by enumeration of all |V|^n sequences, when small enough
    exact_space: int | None = None
    verdict: str = ""             # the rank in words, saying when it is only a bound

    def score(self, metric: str) -> float:
        return self.rds if metric == "rds" else self.ds


def score_phrases(before: LoadedModel, after: LoadedModel, phrases: list[list[int]],
                  contexts: list[Sequence[int]] | None = None) -> list[dict]:
    """p_before, p_after, DS and RDS of each token of each token-id phrase (scoring engine),
    read after its context (the context token, then ``contexts[i]`` when given)."""
    contexts = contexts or [()] * len(phrases)
    joined = [[*context, *phrase] for context, phrase in zip(contexts, phrases)]
    out = []
    for sb, sa, phrase in zip(score_token_ids(before, joined), score_token_ids(after, joined),
                              phrases):
        kept = slice(len(sb.logprobs) - len(phrase), None)
        lb = np.asarray(sb.logprobs, np.float64)[kept]
        la = np.asarray(sa.logprobs, np.float64)[kept]
        out.append({"p_before": np.exp(lb), "p_after": np.exp(la), "ds": np.exp(la) - np.exp(lb),
                    "rds": np.expm1(la - lb)})
    return out


def decode(lm: LoadedModel, ids) -> str:
    return lm.tokenizer.decode([int(i) for i in ids])


def prefix_knowledge(before: LoadedModel, after: LoadedModel, token_ids: list[int], *,
                     relative: bool = False) -> list[int]:
    """Exact rank of each token of the phrase among all tokens, given the tokens before it."""
    ids = torch.tensor([context_of(before) + list(token_ids[:-1])])
    with torch.inference_mode():
        logs = [torch.log_softmax(lm.model(
            input_ids=ids.to(lm.device), attention_mask=torch.ones_like(ids, device=lm.device),
        ).logits[0].float(), -1).cpu() for lm in (before, after)]
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
        text=text, token_ids=list(ids), tokens=[decode(before, [i]) for i in ids],
        p_before=scores["p_before"].tolist(), p_after=scores["p_after"].tolist(),
        ds_tokens=ds.tolist(), rds_tokens=scores["rds"].tolist(), ds=float(ds.sum()),
        rds=float(scores["rds"].sum()), suffix_ds=[float(ds[i:].sum()) for i in range(len(ds))],
        next_token_rank=prefix_knowledge(before, after, ids, relative=relative))


def conclude(report: PhraseReport, searched: list[tuple[list[int], float]], *, metric: str,
             tolerance: float) -> None:
    """Rank the whole phrase among the searched sequences of its length ((token ids, score),
    best first), and say what the rank is (``rank_bound``, ``verdict``); call it after any
    exact rank is known."""
    target = report.score(metric)
    report.searched = len(searched)
    report.found_at = next((i for i, (ids, _) in enumerate(searched)
                            if list(ids) == report.token_ids), None)
    report.rank = sum(score > target + tolerance for _, score in searched) if searched else None
    standing: RankBound = ("unranked" if not searched else "above_all" if report.rank == 0 else
                           "below_all" if report.rank == len(searched) else "among")
    report.rank_bound = "exact" if report.exact_rank is not None else standing
    report.verdict = verdict(report, standing, metric,
                             best=max((score for _, score in searched), default=np.nan))


def verdict(report: PhraseReport, standing: RankBound, metric: str, *, best: float) -> str:
    """The phrase's rank in words: exact, and/or a bound among the searched sequences."""
    n, found, rank = len(report.token_ids), report.searched, report.rank
    score = f"{metric.upper()} {report.score(metric):.3f}"
    searched = f"{found:,} searched sequence{'s' if found != 1 else ''} of {n} tokens"
    if standing == "unranked":
        among = f"the search found no sequence of {n} tokens to compare it with"
    elif standing == "above_all":
        among = (f"none of the {searched} scores higher than its {score} (best {best:.3f}): "
                 "rank 0 among them. The search is not exhaustive, so this is a bound: a "
                 "sequence it did not reach may still score higher")
    elif standing == "below_all":
        among = (f"all {searched} score higher than its {score} (best {best:.3f}): its "
                 f"differential rank is at least {rank:,}")
    else:
        among = (f"{rank:,} of the {searched} score higher than its {score}: its differential "
                 f"rank is at least {rank:,} (the search is not exhaustive)")
    if report.found_at is not None:
        among = f"the search found it; {among}"
    if report.exact_rank is None:
        return among[0].upper() + among[1:]
    return (f"Exact differential rank {report.exact_rank:,}: that many of all "
            f"{report.exact_space:,} sequences of {n} tokens score higher (enumerated); {among}")
