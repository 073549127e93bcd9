"""The windows search of differential rank: L-token windows of a text sample, ranked by score.

Beam search (Zanella-Béguelin, Tople et al. §2.4) keeps the sequences whose *prefixes* score
highest, so a phrase whose first token the update left alone (DS ≈ 0) is pruned at the first
step however high the rest of it scores. This search starts from text instead: every L-token
window of a sample is a candidate, from texts the auditor suspects resemble the update's data
(any text file) or, with none given, from texts the updated model writes itself (top-40
sampling, which reproduces what it learned). The sample is read once, in context, by both
models; the ``keep`` windows whose in-context score sum is highest (where DS jumps) are
returned, for the caller to score each on its own after the context token, as Definition 1
scores every searched sequence. A sample of a fine-tuner's rows (``core.chat``) is rendered with
the chat template and read whole, its windows taken only from the tokens training learnt from.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from core import chat
from core.readers.data import read_texts
from core.errors import UserError
from core.generation.sampling import generate
from core.models import LoadedModel
from core.runtime import Progress, check_cancel, no_progress
from core.scoring import Sampler, score_token_ids

SAMPLE_TOP_K = 40                 # the updated model writes the sample with top-40 sampling


Sample = tuple[list[list[int]], list | None]   # token ids, and each one's trained mask (rows)


def sample_token_ids(after: LoadedModel, source: str, *, texts: int, tokens: int, seed: int,
                     mask: str = "auto", template: str = "", progress: Progress = no_progress,
                     cancel: threading.Event | None = None) -> Sample:
    """The sample's token ids: the texts of ``source`` (a data file; a fine-tuner's rows
    rendered, with their trained masks), or, when it is empty, ``texts`` texts of at most
    ``tokens`` tokens that ``after`` writes (top-40 sampling)."""
    rendered = chat.source_sequences(source, after, mask=mask, template=template) \
        if source.strip() else None
    if rendered:
        return [list(r.ids) for r in rendered], [r.trained for r in rendered]
    if source.strip():
        documents = read_texts(source)
        samples = after.tokenizer(documents, add_special_tokens=False)["input_ids"]
    else:
        generated = generate(after, Sampler(top_k=SAMPLE_TOP_K), [[] for _ in range(texts)],
                             max_new_tokens=tokens, seed=seed, progress=progress, cancel=cancel)
        samples = [s.tolist() for s in generated.samples]
        check_cancel(cancel)  # a sample cut short by a cancel is not worth searching
    samples = [ids for ids in samples if ids]
    if not samples:
        raise UserError("the sample holds no text to take windows from: give a text file "
                        "(--sample) or let the updated model write some (--sample-texts)")
    return samples, None


def in_context_scores(before: LoadedModel, after: LoadedModel, samples: list[list[int]], *,
                      relative: bool, add_bos: bool = True, progress: Progress = no_progress,
                      cancel: threading.Event | None = None) -> list[np.ndarray]:
    """DS (or RDS) of every token of every sample, read in its text (scoring engine); not
    ``add_bos`` (a rendered row holds its own start): the first token's, unscored, is 0."""
    halves = [lambda f, m="", partial=None, at=at: progress(at + f / 2, f"reading the sample: {m}")
              for at in (0.0, 0.5)]
    scored = [score_token_ids(lm, samples, add_bos=add_bos, progress=report, cancel=cancel)
              for lm, report in zip((before, after), halves)]
    out = []
    for sb, sa in zip(*scored):
        lb, la = np.asarray(sb.logprobs, np.float64), np.asarray(sa.logprobs, np.float64)
        ds = np.expm1(la - lb) if relative else np.exp(la) - np.exp(lb)
        out.append(np.concatenate([np.zeros(sa.first_scored), ds]))
    return out


def best_windows(samples: list[list[int]], scores: list[np.ndarray], *, length: int, keep: int,
                 allowed: torch.Tensor, trained: list | None = None) -> list[list[int]]:
    """The ``keep`` distinct ``length``-token windows of highest in-context score sum (windows
    holding a token the search never uses, e.g. a special one, or, with ``trained`` masks, one
    training did not learn from, are left out)."""
    best: dict[tuple[int, ...], float] = {}
    usable = allowed.numpy()
    for n, (ids, per_token) in enumerate(zip(samples, scores)):
        if len(ids) < length:
            continue
        ids_array = np.asarray(ids)
        ok = np.zeros(len(ids), bool)
        inside = ids_array < len(usable)
        ok[inside] = usable[ids_array[inside]]
        if trained is not None:
            ok &= np.asarray(trained[n], dtype=bool)
        sums = np.convolve(per_token, np.ones(length), "valid")
        clean = np.convolve(ok.astype(int), np.ones(length, int), "valid") == length
        for start in np.flatnonzero(clean):
            window = tuple(ids[start: start + length])
            best[window] = max(best.get(window, -np.inf), float(sums[start]))
    ranked = sorted(best.items(), key=lambda item: -item[1])[:keep]
    return [list(window) for window, _ in ranked]
