"""The one scoring engine: per-token log-probabilities of many texts under a causal LM.

Public API (every attack calls this, never the model directly)::

    from core.models import resolve_model
    from core.scoring import score_texts, score_token_ids, Sampler, SequenceScores

    lm = resolve_model("path/to/model")
    scores = score_texts(lm, ["To be, or not to be", "John Doe's card is 4929 ..."])
    s = scores[0]
    s.token_ids      # np.int64, the text's tokens (no special tokens added)
    s.logprobs       # np.float32, log p(token_ids[s.first_scored + j] | everything before)
    s.first_scored   # 0: a context token (<|endoftext|>, else BOS, else EOS) was prepended,
                     #    so EVERY token is scored (context_ids(tokenizer) gives it)
    s.total_logprob, s.n_scored, s.perplexity

    score_token_ids(lm, [[12, 7, 99], ...])                 # same, from token ids
    score_token_ids(lm, seqs, add_bos=False)                # first token is context, not scored
    score_texts(lm, texts, sampler=Sampler(top_k=40, temperature=1.0))
        # log-density of a top-k / temperature sampler (Stock et al. §3.2): -inf outside the top-k
    plain, sampled = score_under_samplers(lm, seqs, [None, Sampler(top_k=40)])  # one forward pass
    lp, mu, var = score_under_samplers(lm, seqs, [None, Moment("mean"), Moment("variance")])
        # mu/var: mean and variance of log p(z) under the next-token distribution (Min-K%++)
    lp, rank = score_under_samplers(lm, seqs, [None, Rank()])   # rank 1: the greedy token

Per-token scores given a known prefix: score ``prefix + continuation`` and read the last
``len(continuation)`` values of ``logprobs``.

Batched (length-sorted, right-padded, attention-masked), sliding windows for sequences longer
than the context, batch halved on out-of-memory, results cached by (model load, sampler,
tokens) so switching metrics costs nothing, and on disk for a model loaded from files (keyed by
its files' hash) so the next command reuses them (``core.scoring.cache``). Options: ``batch_size``, ``window``, ``stride``,
``progress(fraction, message)``, ``cancel`` (a ``threading.Event``; raises ``core.runtime.Cancelled``).
The engine needs only what ``ScoredModel`` lists, so it imports nothing of ``core.models``.
CLI: ``python -m core score --model M --input FILE [--top-k K --temperature T --top-p P] --json``.
"""

from core.scoring.cache import SequenceScores, clear_cache
from core.scoring.engine import (Moment, Rank, Sampler, context_ids, score_texts, score_token_ids,
                                 score_under_samplers)

__all__ = ["Moment", "Rank", "Sampler", "SequenceScores", "clear_cache", "context_ids", "score_texts", "score_token_ids",
           "score_under_samplers"]
