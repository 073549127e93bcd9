"""Extraction from a chat model as it was fine-tuned: prompts are the template's generation
prompts, samples are the assistant's replies.

Each assistant turn of a fine-tuner's rows (``core.chat``) gives a prompt, the conversation
before it rendered with the generation prompt (``add_generation_prompt=True``), and its trained
reply; a plain text is one user message. Samples start from a prompt (no end-of-text context
token: the template holds its own start) and stop at the end-of-turn token (the last trained
token of a rendered turn, when the template marks it with a special token), the EOS or the
length cap; a reply is scored given its prompt, by the target and the reference alike (the
Carlini ranking on the same prompts). Each trained reply gets its probabilistic extraction
p_z given its prompt under the strategy's sampling (Hayes et al., NAACL 2025) and b in bits
(Liu, Evans & Xiong 2026), from one scoring pass.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from core import chat
from core.readers import rows
from core.attacks.inextractability.probabilistic import from_arrays, suffix_arrays_of_ids
from core.attacks.inextractability.spec import token_bits
from core.readers.data import data_file, read_table
from core.errors import DataError
from core.models import LoadedModel
from core.scoring import Sampler

MAX_REPLIES = 2000   # trained replies whose p_z a run measures (the first ones of the file)
SHOWN = 120         # characters of a prompt (its end) or a reply shown
PROBE = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi."}]


@dataclass(frozen=True)
class ChatTurn:
    """One generation prompt: its token ids, the user's last message, and the reply training
    learnt after it (None for a plain user message)."""

    prompt_ids: list[int]
    user: str
    reply_ids: list[int] | None = None
    reply: str = ""


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The [start, end) index ranges of the runs of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def _shown(tokenizer, ids: list[int], tail: bool = False) -> str:
    text = " ".join(tokenizer.decode(ids, skip_special_tokens=True).split())
    return ("…" + text[-SHOWN:] if len(text) > SHOWN else text) if tail else text


def read_turns(source: str, lm: LoadedModel, template: str = "") -> list[ChatTurn]:
    """Every generation prompt of ``source``: of a fine-tuner's rows, the tokens before each
    run of trained tokens (an assistant turn, a completion) with that run as its reply, as
    ``core.chat`` renders them; of plain texts, one user message each."""
    table = read_table(source)
    renderer = chat.Renderer(lm.tokenizer, chat.read_template(template), lm.name)
    tokenizer = lm.tokenizer
    if isinstance(table, list) or "text" in table.columns:
        texts = table if isinstance(table, list) else table["text"].astype(str).tolist()
        return [ChatTurn(tokenizer(renderer.render([{"role": "user", "content": t}], prompt=True),
                                   add_special_tokens=False)["input_ids"], t)
                for t in texts if t.strip()]
    kind = rows.table_kind(table.columns, data_file(source).name)
    turns = [ChatTurn(r.ids[:lo], _shown(tokenizer, r.ids[:lo], tail=True), r.ids[lo:hi],
                      _shown(tokenizer, r.ids[lo:hi]))
             for r in chat.render_rows(table.to_dict("records"), kind, renderer)
             for lo, hi in _runs(r.trained) if lo]
    if not turns:
        raise DataError(f"{data_file(source).name} holds no trained reply to prompt for")
    return turns


def chat_turns(config, lm: LoadedModel) -> list[ChatTurn]:
    """The chat strategy's turns: of the chat prompts, else of the training corpus."""
    return read_turns(config.chat_prompts.strip() or config.corpus, lm, config.chat_template)


def pick_prompts(turns: list[ChatTurn], n: int, rng: np.random.Generator) -> list[ChatTurn]:
    """``n`` turns: each distinct prompt in turn, then at random (as many samples per prompt
    as ``n`` allows, each prompt before any twice)."""
    distinct = list({tuple(t.prompt_ids): t for t in turns}.values())
    order = list(rng.permutation(len(distinct)))
    picks = [distinct[i] for i in (order * (n // len(distinct) + 1))[:n]]
    return picks


def end_of_turn(lm: LoadedModel, template: str = "") -> int | None:
    """The template's end-of-turn id: the last trained token of a rendered assistant turn,
    when it is a special token (e.g. ``<|im_end|>``, ``<|eot_id|>``)."""
    renderer = chat.Renderer(lm.tokenizer, chat.read_template(template), lm.name)
    ids, trained = renderer.tokens(*renderer.conversation(PROBE, 1))
    last = ids[int(np.flatnonzero(trained)[-1])] if trained.any() else None
    special = set(lm.tokenizer.all_special_ids) | set(lm.tokenizer.added_tokens_decoder)
    return last if last in special else None


def reply_measures(lm: LoadedModel, turns: list[ChatTurn], sampler: Sampler, *,
                   rank_threshold: int, probability: float, batch_size: int,
                   cancel: threading.Event | None = None) -> list[tuple]:
    """(p_z result, b) of each trained reply given its prompt, as training tokenised them: one
    pass under the model, the ranks and ``sampler`` (no context token: the prompt is one)."""
    pairs = [t for t in turns if t.reply_ids][:MAX_REPLIES]
    arrays = suffix_arrays_of_ids(lm, [t.prompt_ids + t.reply_ids for t in pairs],
                                  [len(t.reply_ids) for t in pairs], sampler, add_bos=False,
                                  batch_size=batch_size, cancel=cancel)
    return [(from_arrays(t.user, t.reply, own, ranks, sampled, probability),
             float(token_bits(ranks, own, rank_threshold).sum()))
            for t, (own, ranks, sampled) in zip(pairs, arrays)]
