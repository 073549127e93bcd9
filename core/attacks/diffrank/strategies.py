"""The searches of a differential-rank run, and the sequences they return.

A run looks for the sequences of L tokens whose differential score DS (or RDS) rose most
(Zanella-Béguelin, Tople et al. 2020): by §2.4's beam search (``core.attacks.diffrank.search``),
by the windows of a text sample (``core.attacks.diffrank.windows``), or by both, ranked
together. Every returned sequence is rescored on its own by the scoring engine, as a typed
phrase is, so that their scores compare; the partial results reported while the beam search
runs use the search's own sums (equal to the engine's up to float error).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.attacks.diffrank.config import MAX_ROWS, DiffRankConfig
from core.attacks.diffrank.phrase import decode, score_phrases
from core.attacks.diffrank.search import Beams, Expander, beam_search
from core.attacks.diffrank.windows import best_windows, in_context_scores, sample_token_ids
from core.calibration.public import PublicMark
from core.models import LoadedModel
from core.runtime import Progress, no_progress, share

Found = tuple[list[int], int, str]    # a searched sequence: token ids, group, which search


@dataclass
class FoundSequence:
    """One sequence a search returned, with its scores."""

    rank: int                     # 0: the highest score
    phrase: str
    ds: float
    rds: float
    group: int                    # beam search: 1..G; windows: 0
    found_by: str                 # "beam" or "windows"
    tokens: list[str]
    token_ids: list[int]
    public: PublicMark | None = None   # None: no public sample given


def ranked(before: LoadedModel, found: list[Found], scores: list[tuple[float, float]],
           metric: str) -> list[FoundSequence]:
    """The found sequences best first by ``metric``, each once, at most ``MAX_ROWS``."""
    key = 0 if metric == "ds" else 1
    rows: list[FoundSequence] = []
    seen: set[tuple[int, ...]] = set()
    for (ids, group, by), (ds, rds) in sorted(zip(found, scores), key=lambda x: -x[1][key]):
        if tuple(ids) in seen:
            continue
        seen.add(tuple(ids))
        rows.append(FoundSequence(rank=len(rows), phrase=decode(before, ids), ds=ds, rds=rds,
                                  group=group, found_by=by, token_ids=list(ids),
                                  tokens=[decode(before, [i]) for i in ids]))
        if len(rows) == MAX_ROWS:
            break
    return rows


def rescored(before: LoadedModel, after: LoadedModel, found: list[Found],
             metric: str) -> list[FoundSequence]:
    """The found sequences with DS and RDS from the scoring engine, best first."""
    scores = score_phrases(before, after, [ids for ids, _, _ in found])
    return ranked(before, found, [(float(s["ds"].sum()), float(s["rds"].sum())) for s in scores],
                  metric)


class Search:
    """One run's searches over two models; the text sample is read once, whatever the length."""

    def __init__(self, config: DiffRankConfig, before: LoadedModel, after: LoadedModel,
                 cancel: threading.Event | None):
        self.config, self.before, self.after, self.cancel = config, before, after, cancel
        self.expander = Expander(before, after, config.relative, cancel)
        self.vocabulary = int(self.expander.allowed.sum())
        self.samples: list[list[int]] = []
        self.trained: list | None = None     # a sample of rendered rows: their trained masks
        self.in_context: list = []
        self.windows_found = 0

    def _read_sample(self, progress: Progress) -> None:
        config = self.config
        self.samples, self.trained = sample_token_ids(
            self.after, config.sample, texts=config.sample_texts, tokens=config.sample_tokens,
            seed=config.seed, mask=config.mask, template=config.chat_template,
            progress=share(progress, 0, 0.5, "writing the sample: "), cancel=self.cancel)
        self.in_context = in_context_scores(self.before, self.after, self.samples,
                                            relative=config.relative, cancel=self.cancel,
                                            add_bos=self.trained is None,
                                            progress=share(progress, 0.5, 1))

    def windows(self, length: int, progress: Progress) -> list[FoundSequence]:
        """The k best windows of ``length`` tokens of the sample, scored on their own."""
        if not self.samples:
            self._read_sample(progress)
        best = best_windows(self.samples, self.in_context, length=length, keep=self.config.beam,
                            allowed=self.expander.allowed, trained=self.trained)
        self.windows_found = len(best)
        return rescored(self.before, self.after, [(ids, 0, "windows") for ids in best],
                        self.config.metric)

    def rows(self, length: int, *, progress: Progress = no_progress,
             partial: Callable[[list[FoundSequence]], Any] | None = None,
             ) -> tuple[list[FoundSequence], bool]:
        """The configured search's sequences of ``length`` tokens, best first, and whether it
        stopped early; ``partial(rows so far)`` is reported after every beam step."""
        config = self.config
        beam_from = {"beam": 0.0, "windows": 1.0}.get(config.strategy, 0.3)
        windows = (self.windows(length, share(progress, 0, beam_from))
                   if config.strategy != "beam" else [])
        if config.strategy == "windows":
            return windows, False
        earlier = [(r.token_ids, r.group, r.found_by) for r in windows]

        def snapshot(beams: list[Beams]) -> Any:
            """The rows so far, with the beam search's own (ranked, other) score sums."""
            sums = [(float(s), float(o)) for b in beams for s, o in zip(b.scores, b.other)]
            if config.metric == "rds":
                sums = [(ds, rds) for rds, ds in sums]
            scores = [(r.ds, r.rds) for r in windows] + sums
            return partial(ranked(self.before, earlier + _found(beams), scores, config.metric))

        beams, stopped = beam_search(self.expander, beam=config.beam, length=length,
                                     groups=config.groups, floor=config.rows,
                                     progress=share(progress, beam_from, 1),
                                     snapshot=None if partial is None else snapshot)
        return rescored(self.before, self.after, earlier + _found(beams), config.metric), stopped

    def shortfall(self, rows: list[FoundSequence], stopped: bool) -> list[str]:
        """Why the search returned fewer sequences than asked (empty when it did not)."""
        config, vocab, length = self.config, self.vocabulary, self.config.length
        if len(rows) >= config.rows:
            return []
        why = []
        if stopped:
            why.append("the search was stopped before it finished")
        if vocab ** length < config.rows:
            why.append(f"only {vocab:,}^{length} = {vocab ** length:,} sequences of {length} "
                       f"tokens exist over the {vocab:,} tokens searched (special tokens never "
                       "are)")
        if config.beam < config.rows:
            why.append(f"the beam width k = {config.beam} is below it: raise k")
        if config.strategy == "windows" and self.windows_found < config.beam:
            why.append(f"the sample holds only {self.windows_found:,} distinct windows of "
                       f"{length} tokens: give a longer sample or more texts")
        if not why:
            why.append("the beam ran out of distinct extensions")
        return [f"{len(rows)} sequences found, fewer than the {config.rows} asked: "
                + "; ".join(why)]


def _found(beams: list[Beams]) -> list[Found]:
    return [(t.tolist(), b.group + 1, "beam") for b in beams for t in b.tokens]
