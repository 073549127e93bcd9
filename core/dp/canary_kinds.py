"""The canary kinds of the DP canary audit: what each canary's secret of k tokens is drawn from
(Panda, Tang, Nasr, Choquette-Choo & Mittal, ICLR 2025, "Privacy Auditing of Large Language
Models", arXiv 2503.06808: canaries the starting model finds unlikely are memorised more, so
members stand out more). Every canary is "My canary words are" + its secret, on token ids:

- ``random_words``: k tokens drawn uniformly from the V tokens that are a space and a lowercase
  word and encode back to themselves (``word_tokens``); prior k·log2 V bits.
- ``new_tokens``: the model gets m·k rows more (``resize_token_embeddings``), canary i the k
  new ids V0 + ik … V0 + ik + k − 1 of its own, so a non-member's tokens occur in no training
  record. The new rows (input embeddings and an untied head alike) are drawn from
  N(mean, diag(std²)) of the existing rows, seeded: scoring the starting model and training
  use this same resized model, so log p_start of a new token is the init's. The input
  embeddings stay frozen in the fine-tuning: a new token is a fixed random key, and its head
  row learns to predict it. Prior k·log2(m·k) bits (k of the m·k new tokens).
- ``least_likely`` (the paper's least-likely/"search" tokens): the N tokens of lowest
  probability under the starting model right after the prefix, where the secret starts and
  where ``ratio`` scoring reads the first token, not special and encoding back to themselves;
  k drawn uniformly from them, prior k·log2 N. (The prefix's end rather than a mean over the
  corpus' positions: it is the very distribution the first secret token is scored under, and
  one forward pass.)
- ``bigram``: model-free, from the fine-tuning corpus' tokens (those that encode back to
  themselves) such that no consecutive pair of the canary, prefix's last token → first secret
  token included, occurs in the corpus: a sequence the corpus' bigram model gives probability
  0. Drawn uniformly from all such sequences by counting them backwards (``ways``); the prior is
  log2 of their number.

Every kind's coins are fair and seeded from the same stream, after the secrets.
"""

from __future__ import annotations

import copy
import math
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np
import scipy.sparse
import torch

from core.dp.finetune_config import DPFinetuneConfig
from core.dp.finetune_data import read_corpus
from core.errors import UserError
from core.models import LoadedModel
from core.scoring import context_ids

if TYPE_CHECKING:
    from core.dp.canary_audit import DpCanaryAuditConfig

Kind = Literal["random_words", "new_tokens", "least_likely", "bigram"]
CANARY_PREFIX = "My canary words are"
WORD = re.compile(r" [a-z]{2,}")  # what a canary's token decodes to: a space and a word
MIN_VOCABULARY = 50       # word tokens a tokenizer needs for canaries
# new_tokens' m·k added rows: 32,768 grow SmolLM2's vocabulary by two thirds (embeddings, head,
# their optimizer state and every batch's logits with it); the paper's m = 1000, k = 6 is 6,000
MAX_NEW_TOKENS = 2**15
CANARY_STREAM = 0xCA7A5   # keys the canaries' words and coins apart from the other seeded draws
# config fields a kind's training does not read, left out of the run hash (random_words: the
# hash it had before there were kinds, so its checkpoints are reused)
UNHASHED = {"random_words": ("kind", "least_likely_pool"), "new_tokens": ("least_likely_pool",),
            "least_likely": (), "bigram": ("least_likely_pool",)}


@dataclass
class Canaries:
    secrets: np.ndarray           # (m, k) token ids
    members: np.ndarray           # each canary's coin (True: included in training)
    pool: int                     # the tokens the secrets are drawn from
    prior_bits: float             # a secret's surprise under a uniform guess from the pool
    lm: LoadedModel               # the model to score and train (new_tokens: resized)
    texts: list[str]              # each secret, readable


def self_encoding_tokens(tokenizer, keep: Callable[[str], object] = bool) -> np.ndarray:
    """The ids, not special, whose text satisfies ``keep`` and that the tokenizer encodes back
    to themselves alone."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    special = set(tokenizer.all_special_ids)
    found = {i: text for i, text in enumerate(texts) if i not in special and keep(text)}
    encoded = tokenizer(list(found.values()), add_special_tokens=False).input_ids if found else []
    return np.array([i for i, ids in zip(found, encoded) if ids == [i]], dtype=np.int64)


def word_tokens(tokenizer) -> np.ndarray:
    """The token ids that decode to a space and a lowercase word (``WORD``) and that the
    tokenizer encodes back to themselves alone."""
    tokens = self_encoding_tokens(tokenizer, WORD.fullmatch)
    if len(tokens) < MIN_VOCABULARY:
        raise UserError(f"the tokenizer has {len(tokens)} tokens that are a space and a word: "
                        f"canaries need at least {MIN_VOCABULARY}")
    return tokens


def draw_canaries(vocabulary: np.ndarray, *, count: int, words: int,
                  seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(count × words) distinct rows of tokens drawn uniformly from ``vocabulary``, and each
    row's fair coin (True: included in training), from the seed."""
    if len(vocabulary) ** words < count:
        raise UserError(f"{len(vocabulary)} tokens make {len(vocabulary) ** words:,} canaries "
                        f"of {words} tokens, fewer than {count:,}: use more words")
    rng = np.random.default_rng([CANARY_STREAM, seed])
    drawn: dict[tuple[int, ...], None] = {}
    while len(drawn) < count:
        rows = rng.choice(vocabulary, size=(count - len(drawn), words)).tolist()
        drawn.update(dict.fromkeys(map(tuple, rows)))
    return np.array(list(drawn), dtype=np.int64), rng.random(count) < 0.5


def corpus_records(plan: DPFinetuneConfig, tokenizer) -> tuple[list[list[int]], list[str]]:
    """The fine-tuning corpus' training records as token ids (empty ones dropped), and the
    validation texts (``read_corpus``)."""
    train, validation = read_corpus(plan, random.Random(plan.seed))
    return [ids for ids in tokenizer(train, add_special_tokens=False).input_ids if ids], validation


def with_new_tokens(base: LoadedModel, count: int, seed: int) -> LoadedModel:
    """A copy of ``base`` with ``count`` new token rows after its V0, drawn per dimension from
    N(mean, std²) of the existing rows (each embedding matrix from its own), seeded."""
    model = copy.deepcopy(base.model)
    old = model.get_input_embeddings().num_embeddings
    model.resize_token_embeddings(old + count, mean_resizing=False)
    rng = np.random.default_rng([CANARY_STREAM, seed, count])
    matrices = {id(m.weight): m.weight for m in (model.get_input_embeddings(),
                                                 model.get_output_embeddings()) if m is not None}
    with torch.no_grad():
        for weight in matrices.values():
            rows = weight[:old].float()
            noise = torch.from_numpy(rng.standard_normal((count, weight.shape[1]))).float()
            weight[old:] = (rows.mean(0) + rows.std(0) * noise.to(weight.device)).to(weight.dtype)
    return LoadedModel(f"{base.name}+{count} new tokens (seed {seed})", base.source, model.eval(),
                       base.tokenizer, base.device, base.card, identity=base.identity)


def least_likely_tokens(lm: LoadedModel, prefix: list[int], size: int) -> np.ndarray:
    """The ``size`` tokens (not special, encoding back to themselves) of lowest probability
    under ``lm`` right after ``prefix`` (with the scoring engine's context token), least first."""
    eligible = self_encoding_tokens(lm.tokenizer)
    if len(eligible) < size:
        raise UserError(f"the tokenizer has {len(eligible)} tokens that encode back to "
                        f"themselves: the least-likely pool must be at most that, not {size:,}")
    ids = torch.tensor([context_ids(lm.tokenizer) + prefix], device=lm.device)
    with torch.no_grad():
        logits = lm.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, -1].float()
    logp = torch.log_softmax(logits, -1).cpu().numpy()
    return eligible[np.argsort(logp[eligible], kind="stable")[:size]]


def bigram_canaries(records: list[list[int]], after: int, pool: np.ndarray, *, count: int,
                    words: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(count × words) distinct rows from ``pool``, uniform among the sequences none of whose
    consecutive pairs (``after`` → first included) occurs in ``records``; the coins; the number
    of such sequences. ways[j][t]: the allowed endings of length words − j that start with t."""
    index = np.full(max(int(pool.max()), after, *(max(r) for r in records)) + 1, -1)
    index[pool] = np.arange(len(pool))
    pairs = np.array([p for r in records for p in zip(r, r[1:])], dtype=np.int64).reshape(-1, 2)
    blocked_first = index[pairs[pairs[:, 0] == after, 1]]
    pairs = index[pairs]
    pairs = pairs[(pairs >= 0).all(axis=1)]
    seen = scipy.sparse.csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                                   shape=(len(pool), len(pool)))
    seen.data[:] = 1      # a pair seen several times is one blocked pair
    ways = [np.ones(len(pool))]
    for _ in range(words - 1):
        ways.insert(0, ways[0].sum() - seen @ ways[0])
    first = ways[0].copy()
    first[blocked_first[blocked_first >= 0]] = 0
    total = float(first.sum())
    if total < count:
        raise UserError(f"the corpus' {len(pool):,} tokens make {total:,.0f} canaries of "
                        f"{words} tokens without a corpus bigram, fewer than {count:,}: use more "
                        "words")
    rng = np.random.default_rng([CANARY_STREAM, seed])

    def draw(weights: np.ndarray) -> int:
        return int(rng.choice(len(weights), p=weights / weights.sum()))

    drawn: dict[tuple[int, ...], None] = {}
    while len(drawn) < count:
        row = [draw(first)]
        for j in range(1, words):
            weights = ways[j].copy()
            weights[seen.indices[seen.indptr[row[-1]]:seen.indptr[row[-1] + 1]]] = 0
            row.append(draw(weights))
        drawn[tuple(pool[row].tolist())] = None
    return np.array(list(drawn), dtype=np.int64), rng.random(count) < 0.5, total


def plant(config: DpCanaryAuditConfig, base: LoadedModel, prefix: list[int],
          records: list[list[int]]) -> Canaries:
    """The canaries of ``config.kind`` (module doc) for the model ``base`` and the corpus'
    ``records``."""
    count, words, seed, tokenizer = config.canaries, config.words, config.seed, base.tokenizer
    if config.kind == "new_tokens":
        first = base.model.get_input_embeddings().num_embeddings
        secrets = first + np.arange(count * words, dtype=np.int64).reshape(count, words)
        members = np.random.default_rng([CANARY_STREAM, seed]).random(count) < 0.5
        return Canaries(secrets, members, count * words, words * math.log2(count * words),
                        with_new_tokens(base, count * words, seed),
                        [" ".join(f"<new {i}>" for i in row) for row in secrets.tolist()])
    if config.kind == "bigram":
        pool = np.intersect1d(self_encoding_tokens(tokenizer), [t for r in records for t in r])
        if len(pool) == 0:
            raise UserError("the corpus has no token that encodes back to itself")
        secrets, members, total = bigram_canaries(records, prefix[-1], pool, count=count,
                                                  words=words, seed=seed)
        prior_bits = math.log2(total)
    else:
        pool = (word_tokens(tokenizer) if config.kind == "random_words" else
                least_likely_tokens(base, prefix, config.least_likely_pool))
        secrets, members = draw_canaries(pool, count=count, words=words, seed=seed)
        prior_bits = words * math.log2(len(pool))
    texts = [text.strip() for text in tokenizer.batch_decode(secrets.tolist())]
    return Canaries(secrets, members, len(pool), prior_bits, base, texts)


def tightest_kinds(rows: list[dict]) -> dict[float, list[str]]:
    """At each σ of ``rows`` (measured audits: kind, σ, audited ε̂ ``lower``), the kinds of the
    largest audited ε̂ (none when every ε̂ is 0): the figures' table and the DP lab's caption."""
    best = {}
    for sigma in dict.fromkeys(r["sigma"] for r in rows):
        at = [r for r in rows if r["sigma"] == sigma]
        top = max(r["lower"] for r in at)
        best[sigma] = [r["kind"] for r in at if r["lower"] == top] if top > 0 else []
    return best
