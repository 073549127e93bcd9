"""The searches of a differential-rank run, and the sequences they return.

A run looks for the sequences of L tokens whose differential score DS (or RDS) rose most
(Zanella-Béguelin, Tople et al. 2020): by §2.4's beam search (``core.attacks.diffrank.search``),
by the windows of a text sample (``core.attacks.diffrank.windows``), or by both, ranked
together; with ``seeds``, a second beam search starts after in-domain contexts
(``core.attacks.diffrank.seeds``). Every returned sequence is rescored by the scoring engine, as
a typed phrase is, on its own or after the seed it was found after, so that their scores
compare; the partial results reported while a beam search runs use the search's own sums
(equal to the engine's up to float error).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.attacks.diffrank.config import MAX_ROWS, DiffRankConfig
from core.attacks.diffrank.phrase import decode, score_phrases
from core.attacks.diffrank.search import Beams, Expander, beam_search, context_of
from core.attacks.diffrank.seeds import Seed, seed_contexts
from core.attacks.diffrank.windows import best_windows, in_context_scores, sample_token_ids
from core.calibration.public import PublicMark, public_source
from core.models import LoadedModel
from core.readers.data import read_texts
from core.runtime import Progress, no_progress, share

PUBLIC_TEXTS = 2000               # public texts read for seeds at most (a random subset)



@dataclass(frozen=True)
class Found:
    """A searched sequence: its token ids, group, which search, and the seed it was read after."""

    ids: list[int]
    group: int = 0
    by: str = "windows"
    seed: Seed | None = None


@dataclass
class FoundSequence:
    """One sequence a search returned, with its scores."""

    rank: int                     # 0: the highest score
    phrase: str
    ds: float
    rds: float
    group: int                    # beam search: 1..G; windows: 0
    found_by: str                 # "beam", "windows" or "seeded beam"
    tokens: list[str]
    token_ids: list[int]
    public: PublicMark | None = None   # None: no public sample given
    seed: str = ""                # a seeded beam's row: the context it is read (and scored) after
    seed_source: str = ""         # ... and the texts that context was taken from


def ranked(before: LoadedModel, found: list[Found], scores: list[tuple[float, float]],
           metric: str) -> list[FoundSequence]:
    """The found sequences best first by ``metric``, each once (at its best), at most
    ``MAX_ROWS``."""
    key = 0 if metric == "ds" else 1
    rows: list[FoundSequence] = []
    seen: set[tuple[int, ...]] = set()
    for row, (ds, rds) in sorted(zip(found, scores), key=lambda x: -x[1][key]):
        if tuple(row.ids) in seen:
            continue
        seen.add(tuple(row.ids))
        seed = row.seed
        rows.append(FoundSequence(rank=len(rows), phrase=decode(before, row.ids), ds=ds, rds=rds,
                                  group=row.group, found_by=row.by, token_ids=list(row.ids),
                                  tokens=[decode(before, [i]) for i in row.ids],
                                  seed="" if seed is None else before.tokenizer.decode(
                                      list(seed.ids), skip_special_tokens=True),
                                  seed_source="" if seed is None else seed.source))
        if len(rows) == MAX_ROWS:
            break
    return rows


def rescored(before: LoadedModel, after: LoadedModel, found: list[Found],
             metric: str) -> list[FoundSequence]:
    """The found sequences with DS and RDS from the scoring engine (after their seeds), best
    first."""
    scores = score_phrases(before, after, [row.ids for row in found],
                           [row.seed.ids if row.seed else () for row in found])
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
        self.seeds: list[Seed] | None = None

    def _read_sample(self, progress: Progress) -> None:
        """The sample's token ids (a file's, or texts the updated model writes), read once."""
        if self.samples:
            return
        config = self.config
        self.samples, self.trained = sample_token_ids(
            self.after, config.sample, texts=config.sample_texts, tokens=config.sample_tokens,
            seed=config.seed, mask=config.mask, template=config.chat_template,
            progress=share(progress, 0, 0.5, "writing the sample: "), cancel=self.cancel)

    def windows(self, length: int, progress: Progress) -> list[FoundSequence]:
        """The k best windows of ``length`` tokens of the sample, scored on their own."""
        if not self.in_context:
            self._read_sample(progress)
            self.in_context = in_context_scores(self.before, self.after, self.samples,
                                                relative=self.config.relative,
                                                cancel=self.cancel, add_bos=self.trained is None,
                                                progress=share(progress, 0.5, 1))
        best = best_windows(self.samples, self.in_context, length=length, keep=self.config.beam,
                            allowed=self.expander.allowed, trained=self.trained)
        self.windows_found = len(best)
        return rescored(self.before, self.after, [Found(ids) for ids in best],
                        self.config.metric)

    def seeded(self, progress: Progress) -> list[Seed]:
        """The run's in-domain seeds (``core.attacks.diffrank.seeds``), drawn once: from the
        public sample and from the text sample (or the updated model's own samples)."""
        if self.seeds is None:
            config = self.config
            self._read_sample(progress)
            own = "the text sample" if config.sample.strip() else "the updated model's samples"
            sources, masks = {own: self.samples}, {own: self.trained}
            if public := public_source(config):
                texts = read_texts(public)
                texts = random.Random(config.seed).sample(texts, min(len(texts), PUBLIC_TEXTS))
                sources["the public sample"] = self.after.tokenizer(
                    texts, add_special_tokens=False)["input_ids"]
            self.seeds = seed_contexts(sources, self.after.tokenizer, count=config.seeds,
                                       pad=context_of(self.after)[-1], seed=config.seed,
                                       trained={k: v for k, v in masks.items() if v is not None})
        return self.seeds

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
        found = [Found(r.token_ids, r.group, r.found_by) for r in windows]
        sums = [(r.ds, r.rds) for r in windows]
        searches = [None]
        if config.seeds:   # reading the seeds (a sample written, perhaps) takes a tenth
            read_to = beam_from + 0.1 * (1 - beam_from)
            searches.append(self.seeded(share(progress, beam_from, read_to, "seeds: ")))
            beam_from = read_to
        span = (1.0 - beam_from) / len(searches)
        for n, seeds in enumerate(searches):
            def snapshot(beams: list[Beams], seeds=seeds) -> Any:
                """The rows so far, with the beam search's own (ranked, other) score sums."""
                return partial(ranked(self.before, found + _found(beams, seeds),
                                      sums + self._sums(beams), config.metric))

            beams, stopped = beam_search(
                self.expander, beam=config.beam, length=length, groups=config.groups,
                floor=config.rows, seeds=[list(s.ids) for s in seeds] if seeds else None,
                progress=share(progress, beam_from + n * span, beam_from + (n + 1) * span),
                snapshot=None if partial is None else snapshot)
            found, sums = found + _found(beams, seeds), sums + self._sums(beams)
            if stopped:
                break
        return rescored(self.before, self.after, found, config.metric), stopped

    def _sums(self, beams: list[Beams]) -> list[tuple[float, float]]:
        """The beams' (DS, RDS) sums as the search carried them."""
        sums = [(float(s), float(o)) for b in beams for s, o in zip(b.scores, b.other)]
        return [(ds, rds) for rds, ds in sums] if self.config.metric == "rds" else sums

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


def _found(beams: list[Beams], seeds: list[Seed] | None = None) -> list[Found]:
    """The beams' sequences (with the seed each was read after, for a seeded search)."""
    if seeds:
        return [Found(t.tolist(), b.group + 1, "seeded beam", seeds[int(i)])
                for b in beams for t, i in zip(b.tokens, b.seed)]
    return [Found(t.tolist(), b.group + 1, "beam") for b in beams for t in b.tokens]
