"""Each pair's prior under a model not trained on it, and the bound beside what was learnt.

With a reference (the base before fine-tuning, same tokenizer), each phrase or prefix/suffix
pair gets p0 = p_reference(suffix | prefix), the bits the fine-tune learnt,

    learnt = log2 p_target(suffix | prefix) − log2 p0,

and, for a training run of known (σ, q, steps), the Bound Explorer's L(p0) for a secret of
−log2 p0 bits: no attack learns more than L(p0) bits of such a secret from a DP-SGD run with
those parameters (Stock et al. 2022, Eq. 3; ``core.bounds.training_run.leakage_bits``). A gain
above L(p0) says the checkpoint leaks the pair more than that run allows: it was not trained so,
or the pair was in its training set many times (one record's bound does not cover copies).
"""

from __future__ import annotations

import threading

from core.attacks.inextractability.config import InextractabilityConfig, PairBits
from core.bounds import training_run
from core.models import LoadedModel, resolve_model
from core.models.compat import check_same_vocabulary
from core.scoring import Sampler


def with_prior(pairs: list[PairBits], target: LoadedModel, config: InextractabilityConfig,
               cancel: threading.Event | None = None) -> None:
    """Set each pair's ``log2_p_reference``, ``learnt_bits`` and ``prior_bound_bits`` (None
    without σ) from one scoring pass of the pairs under ``config.reference``."""
    from core.attacks.inextractability.spec import pair_measures

    reference = resolve_model(config.reference, device=config.device)
    check_same_vocabulary(target, reference, why="the prior compares the probabilities of the "
                                                 "same suffix tokens under both models")
    measured = pair_measures(reference, config.pairs, Sampler(),
                             rank_threshold=config.rank_threshold,
                             batch_size=config.batch_size, cancel=cancel)
    for pair, (found, _) in zip(pairs, measured):
        pair.log2_p_reference = found.log2_p_model
        pair.learnt_bits = pair.log2_p_model - found.log2_p_model
        pair.prior_bound_bits = training_run.leakage_bits(config.sigma, config.q, config.steps,
                                                          -found.log2_p_model)


def exceeds(pair: PairBits) -> bool | None:
    """Whether the pair's learnt bits pass L(p0) of its prior (None: no prior or no σ)."""
    if pair.learnt_bits is None or pair.prior_bound_bits is None:
        return None
    return pair.learnt_bits > pair.prior_bound_bits
