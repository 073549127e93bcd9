"""One scoring pass per model for the membership-inference suite.

The target model scores, in one call of the engine, every sequence the chosen attacks need: the
texts, their lowercased copies (``lowercase``) and the texts after ReCaLL's prefix
(``recall``), reading from the same forward pass each position's log-probability and, for
Min-K%++, the mean and variance of the next-token distribution (``core.scoring.Moment``), and
for EZ-MIA each token's rank (``core.scoring.Rank``). The reference model, when given, scores the
texts once. Repeated sequences (a text already in lower
case) are scored once by the engine.

A row rendered with a chat template (``core.chat``) is scored as training read it, its own
tokens (no context token: the template begins it), and every attack reads only the tokens
training learnt from (the assistant's, the completion's), the rest of the conversation being
their context: the arrays are cut by the row's mask, zlib reads the trained tokens' text.

ReCaLL (Xie et al. 2024) conditions each text x on one non-member prefix P. When P + x overflow
the scoring window (the model's context), x keeps the last tokens of P that fit: the most
non-member context the window allows, and the tokens next to x (the end the authors' code and
MIMIR keep when they drop shots). A text filling the window keeps none (ratio 1). A note gives
how many texts were cut and the fewest and most prefix tokens a text kept.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from core.attacks.membership.scores import ScoreSettings, TextArrays, text_scores
from core.runtime import Progress
from core.scoring import Moment, Rank, score_under_samplers
from core.scoring.windows import shared_window


@dataclass
class ScoredTexts:
    scores: dict[str, np.ndarray]               # attack -> one score per text
    n_tokens: list[int]
    sequences: dict[str, int] = field(default_factory=dict)   # model -> sequences in its pass
    notes: list[str] = field(default_factory=list)
    # per text, its tokens and log p_target − log p_reference of each (with a reference)
    token_diffs: list[tuple[list[str], list[float]]] = field(default_factory=list)


def _prefixed(prefix_ids: list[int], ids: list[list[int]],
              window: int) -> tuple[list[list[int]], list[int]]:
    """Each text after the last min(|P|, window − 1 − |x|) tokens of the prefix P (one token of
    the window is the engine's context token), and how many prefix tokens each kept."""
    out, kept = [], []
    for seq in ids:
        keep = min(len(prefix_ids), max(0, window - 1 - len(seq)))
        out.append(prefix_ids[len(prefix_ids) - keep:] + seq)
        kept.append(keep)
    return out, kept


def _prefix_note(kept: list[int], total: int, window: int) -> list[str]:
    """A note when some text could not keep the whole prefix: how many, and the range kept."""
    short = sum(k < total for k in kept)
    if not short:
        return []
    return [f"ReCaLL's prefix of {total} tokens does not fit whole before {short} of the "
            f"{len(kept)} texts in the {window}-token window: they keep its last tokens that fit, "
            f"so a text keeps {min(kept)} to {max(kept)} of the {total} (one filling the window "
            "keeps none: ratio 1)."]


def _target_sequences(target, texts: list[str], ids: list[list[int]], chosen: list[str],
                      prefix: str, window: int) -> tuple[list[list[int]], dict[str, slice], list[str]]:
    """The target's sequences (texts, then lowercased, then prefixed), where each part lies, and
    notes."""
    sequences, parts, notes = list(ids), {"texts": slice(0, len(ids))}, []
    if "lowercase" in chosen:
        lowered = target.tokenizer([t.lower() for t in texts], add_special_tokens=False)["input_ids"]
        parts["lowercase"] = slice(len(sequences), len(sequences) + len(ids))
        sequences += lowered
    if "recall" in chosen:
        prefix_ids = target.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        prefixed, kept = _prefixed(prefix_ids, ids, window)
        parts["prefixed"] = slice(len(sequences), len(sequences) + len(ids))
        sequences += prefixed
        notes += _prefix_note(kept, len(prefix_ids), window)
    return sequences, parts, notes


def score_suite(target, reference, texts: list[str], chosen: list[str],
                settings: ScoreSettings, *, prefix: str = "", batch_size: int | None = None,
                progress: Progress, cancel: threading.Event | None = None,
                rendered: list | None = None) -> ScoredTexts:
    """Every chosen attack's score of every text, from one engine call per model; ``rendered``:
    of rows rendered with a chat template, each text's ``ids`` and ``trained`` mask."""
    if rendered is None:
        ids = target.tokenizer(texts, add_special_tokens=False)["input_ids"]
    else:
        ids = [list(r.ids) for r in rendered]
    window = shared_window(target, reference)
    sequences, parts, notes = _target_sequences(target, texts, ids, chosen, prefix, window)
    readouts = _readouts(chosen)
    share = 0.7 if reference is not None else 1.0
    options = dict(batch_size=batch_size, window=window, cancel=cancel,
                   add_bos=rendered is None and not settings.first_is_context)  # MIMIR: x_1 context
    target_out = score_under_samplers(target, sequences, readouts,
                                      progress=lambda f, m="": progress(share * f, f"target: {m}"),
                                      **options)
    reference_out = None
    if reference is not None:
        reference_out = score_under_samplers(
            reference, ids, [None], progress=lambda f, m="": progress(share + (1 - share) * f,
                                                                      f"reference: {m}"),
            **options)[0]
    scores = {name: np.empty(len(texts)) for name in chosen}
    for i, text in enumerate(texts):
        arrays = _arrays(text, i, dict(zip(readouts, target_out)), parts, reference_out)
        if rendered is not None:
            arrays = trained_arrays(arrays, np.asarray(rendered[i].trained, dtype=bool), target)
        for name, value in text_scores(arrays, chosen, settings).items():
            scores[name][i] = value
    for name, values in scores.items():   # a text with no scored token: the least member-like
        values[~np.isfinite(values)] = np.min(values[np.isfinite(values)], initial=0.0) - 1.0
    counts = {"target": len({tuple(s) for s in sequences})}
    if reference is not None:
        counts["reference"] = len({tuple(s) for s in ids})
    n_tokens = [len(s) for s in ids] if rendered is None else [sum(r.trained) for r in rendered]
    return ScoredTexts(scores, n_tokens, counts, notes,
                       token_diffs(target, target_out[0][:len(ids)], reference_out))


def token_diffs(target, scores: list, reference_out) -> list[tuple[list[str], list[float]]]:
    """Each text's scored tokens and log p_target − log p_reference of each, rounded to 1e-4
    nats: where in the text the membership signal is (none without a reference)."""
    if reference_out is None:
        return []
    return [([target.tokenizer.decode([t]) for t in s.token_ids[s.first_scored:].tolist()],
             np.round(s.logprobs.astype(np.float64) - r.logprobs, 4).tolist())
            for s, r in zip(scores, reference_out)]


def trained_arrays(arrays: TextArrays, trained: np.ndarray, target) -> TextArrays:
    """``arrays`` cut to the tokens training learnt from (``trained``: one flag per token id;
    the arrays hold the scored ones, the last of them), zlib's text theirs."""
    keep = trained[len(trained) - len(arrays.target):]
    ids = arrays.token_ids[len(arrays.token_ids) - len(arrays.target):][keep]

    def cut(values):
        return None if values is None else values[keep]

    return TextArrays(text=target.tokenizer.decode(ids), token_ids=ids, target=arrays.target[keep],
                      mean=cut(arrays.mean), variance=cut(arrays.variance),
                      reference=cut(arrays.reference), ranks=cut(arrays.ranks))


def _readouts(chosen: list[str]) -> list:
    """What the target's pass reads out: log-probabilities, and the moments (Min-K%++) and
    ranks (EZ-MIA) when those attacks run."""
    moments = [Moment("mean"), Moment("variance")] if "minkpp" in chosen else []
    return [None, *moments, *([Rank()] if "ezmia" in chosen else [])]


def _arrays(text: str, i: int, target_out: dict, parts: dict[str, slice],
            reference_out) -> TextArrays:
    """What the attacks read of text ``i`` (``target_out``: readout -> the target's scores)."""
    plain = target_out[None][i]
    n = plain.n_scored

    def part(name: str):
        return target_out[None][parts[name].start + i].logprobs if name in parts else None

    def read(readout):
        return target_out[readout][i].logprobs if readout in target_out else None

    prefixed = part("prefixed")
    return TextArrays(
        text=text, token_ids=plain.token_ids, target=plain.logprobs,
        mean=read(Moment("mean")), variance=read(Moment("variance")), ranks=read(Rank()),
        reference=reference_out[i].logprobs if reference_out is not None else None,
        lowercase=part("lowercase"),
        prefixed=None if prefixed is None else prefixed[len(prefixed) - n:])
