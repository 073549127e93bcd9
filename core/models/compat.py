"""The one vocabulary check: token-level comparisons of two models need one tokenizer."""

from __future__ import annotations

from core.errors import UserError
from core.models.loaded import LoadedModel


def check_same_vocabulary(a: LoadedModel, b: LoadedModel, *, why: str) -> None:
    """A ``UserError`` unless ``a`` and ``b`` map the same token strings to the same ids.

    ``why`` finishes the message: what needs the same tokens (e.g. "the differential score
    compares the probabilities of the same tokens").
    """
    va, vb = a.tokenizer.get_vocab(), b.tokenizer.get_vocab()
    if va == vb:
        return
    only = len(set(va) ^ set(vb))
    raise UserError(
        f"{a.name} and {b.name} use different tokenizers ({len(va):,} and {len(vb):,} tokens, "
        f"{only:,} in one only{'' if only else ', ids differ'}): {why}, so pick models of one "
        "family (same tokenizer)")
