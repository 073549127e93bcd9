"""A fine-tuner's rows as the tokens training read, and the tokens it learnt from.

TRL's ``SFTTrainer`` and ``DPOTrainer`` take four kinds of rows (``dataset_kind``): language
modelling (``text``), conversational (``messages``: a list of ``{role, content}`` turns),
prompt-completion (``prompt`` and ``completion``, strings or lists of turns) and preference
(``prompt``, ``chosen``, ``rejected``; without ``prompt``, the turns ``chosen`` and ``rejected``
share are the prompt). Conversations are rendered with the model's chat template
(``tokenizer.apply_chat_template``, transformers' sandboxed Jinja; never remote code) or a
template the user gives for a base model.

The trained-token mask (``mask="auto"``): the assistant's turns of a conversation (TRL's
``assistant_only_loss=True``; a run with TRL's ``False`` trained every token: ``mask="all"``),
the completion of a prompt-completion row (TRL's ``completion_only_loss`` default) and each
completion of a preference row, every token of a text. A turn's tokens are found by rendering
the conversation up to it: the assistant's text is what ``messages[:i + 1]`` adds to
``messages[:i]`` with the generation prompt, trailing whitespace left out (as the ``{% generation %}`` blocks of templates that mark
it end at the end-of-turn token), and a token is trained when it holds a character of it (the
tokenizer's offsets of the whole rendered text, tokenised once without special tokens, as the
template holds them): transformers' ``return_assistant_tokens_mask`` on a template with those
blocks gives the same mask (``tests/core/test_chat.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.data import cell
from core.errors import UserError

KINDS = ("text", "messages", "prompt-completion", "preference")
MASKS = ("auto", "all", "assistant", "completion")
DEFAULT_MASK = {"text": "all", "messages": "assistant", "prompt-completion": "completion",
                "preference": "completion"}
EXPECTED = ("a text column, messages (a list of {role, content} turns), prompt and completion, "
            "or prompt, chosen and rejected")


@dataclass(frozen=True)
class Rendered:
    """One sequence training read: its token ids and, per token, whether its loss was trained."""

    row: int                  # the row of the table it came from
    part: str                 # "" or, for a preference row, "chosen" / "rejected"
    ids: list[int]
    trained: np.ndarray       # bool, one per id

    @property
    def n_trained(self) -> int:
        return int(self.trained.sum())


def dataset_kind(columns: Sequence[str]) -> str:
    """Which of TRL's dataset types a table with ``columns`` is (``KINDS``)."""
    names = set(columns)
    if {"chosen", "rejected"} <= names:
        return "preference"
    if {"prompt", "completion"} <= names:
        return "prompt-completion"
    if "messages" in names:
        return "messages"
    if "text" in names:
        return "text"
    raise UserError(f"found the columns {', '.join(map(str, columns)) or 'none'}: give {EXPECTED}")


def check_mask(kind: str, mask: str) -> str:
    """The mask ``mask`` means for rows of ``kind`` (``auto``: TRL's default), or a UserError."""
    if mask not in MASKS:
        raise UserError(f"the trained-token mask must be one of {', '.join(MASKS)}, not {mask!r}")
    chosen = DEFAULT_MASK[kind] if mask == "auto" else mask
    allowed = {"all", DEFAULT_MASK[kind]}
    if chosen not in allowed:
        raise UserError(f"{kind} rows have no {chosen} tokens: use the mask "
                        f"{' or '.join(sorted(allowed | {'auto'}))}")
    return chosen


class Renderer:
    """Renders rows with one tokenizer and template; ``template`` overrides the tokenizer's."""

    def __init__(self, tokenizer, template: str | None = None, model_name: str = "the model"):
        self.tokenizer, self.template, self.model_name = tokenizer, template, model_name

    def render(self, turns: list[dict], *, prompt: bool = False) -> str:
        if not (self.template or getattr(self.tokenizer, "chat_template", None)):
            raise UserError(f"{self.model_name} has no chat template, so conversations cannot be "
                            "rendered as it was trained on them: give its template (a .jinja "
                            "file, chat_template) or use the chat model's own tokenizer")
        try:
            return self.tokenizer.apply_chat_template(
                turns, chat_template=self.template, tokenize=False, add_generation_prompt=prompt)
        except Exception as err:  # noqa: BLE001 - the template's own (Jinja, raise_exception)
            raise UserError(f"the chat template could not render a row: {err}") from None

    def conversation(self, turns: list[dict],
                     first_trained: int) -> tuple[str, list[tuple[int, int]]]:
        """The rendered ``turns`` and the character spans of the assistant's turns from
        ``first_trained`` on (each what that turn adds to the conversation before it)."""
        full, spans = self.render(turns), []
        for i, turn in enumerate(turns):
            if i < first_trained or turn.get("role") != "assistant":
                continue
            before = self.render(turns[:i], prompt=True) if i else ""
            upto = self.render(turns[: i + 1])
            if not (full.startswith(upto) and upto.startswith(before)):
                raise UserError("the chat template does not render a conversation as its turns "
                                "one after the other, so the assistant's tokens cannot be found "
                                "(give a template that does, or mask all tokens)")
            spans.append((len(before), len(upto.rstrip())))
        return full, spans

    def tokens(self, text: str, spans: list[tuple[int, int]]) -> tuple[list[int], np.ndarray]:
        """Token ids of ``text`` and whether each holds a character of one of ``spans``."""
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = np.array(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        trained = np.zeros(len(offsets), dtype=bool)
        for lo, hi in spans:
            trained |= (offsets[:, 0] < hi) & (offsets[:, 1] > lo)
        return list(encoded["input_ids"]), trained


def _turns(value, column: str, row: int) -> list[dict]:
    """A list of ``{role, content}`` turns, as plain dicts, or a UserError naming the row."""
    value = list(value) if isinstance(value, (list, tuple, np.ndarray)) else value
    if not isinstance(value, list) or not value or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str)
            and isinstance(t.get("content"), str) for t in value):
        raise UserError(f"row {row + 1}: {column} must be a non-empty list of "
                        "{role, content} turns (strings)")
    return [dict(t) for t in value]


def _completion(renderer: Renderer, prompt, completion, mask: str) -> tuple[str, list]:
    """The rendered prompt and completion and the spans of what training learnt from."""
    if isinstance(prompt, str) and isinstance(completion, str):
        eos = renderer.tokenizer.eos_token or ""
        full = prompt + completion + ("" if completion.endswith(eos) else eos)
        return full, [(0 if mask == "all" else len(prompt), len(full))]
    full, spans = renderer.conversation(prompt + completion, len(prompt))
    return full, [(0, len(full))] if mask == "all" else spans


def _implicit_prompt(chosen: list[dict], rejected: list[dict]) -> int:
    """How many leading turns ``chosen`` and ``rejected`` share (TRL's implicit prompt)."""
    shared = 0
    while shared < min(len(chosen), len(rejected)) - 1 and chosen[shared] == rejected[shared]:
        shared += 1
    return shared


def _pieces(record: dict, kind: str, row: int) -> list[tuple[str, object, object]]:
    """(part, prompt, completion) of a prompt-completion or preference row."""
    if kind == "prompt-completion":
        parts = [("", record["prompt"], record["completion"])]
    else:
        parts = [(p, record.get("prompt"), record[p]) for p in ("chosen", "rejected")]
    out = []
    for part, prompt, completion in parts:
        if isinstance(completion, str) and isinstance(prompt, str):
            out.append((part, prompt, completion))
            continue
        completion = _turns(completion, part or "completion", row)
        prompt = None if cell(prompt) is None else _turns(prompt, "prompt", row)
        out.append((part, prompt, completion))
    if kind == "preference" and out[0][1] is None:   # prompt inside chosen and rejected
        shared = _implicit_prompt(out[0][2], out[1][2])
        out = [(part, c[:shared], c[shared:]) for part, _, c in out]
    return out


def _row_pieces(record: dict, kind: str, renderer: Renderer, mask: str, row: int) -> list[tuple]:
    """(part, rendered text, trained character spans) of one row."""
    if kind == "text":
        text = cell(record["text"])
        if not isinstance(text, str):
            raise UserError(f"row {row + 1}: text must be a string")
        return [("", text, [(0, len(text))])]
    if kind == "messages":
        turns = _turns(record["messages"], "messages", row)
        if mask == "assistant":
            return [("", *renderer.conversation(turns, 0))]
        full = renderer.render(turns)
        return [("", full, [(0, len(full))])]
    return [(part, *_completion(renderer, prompt, completion, mask))
            for part, prompt, completion in _pieces(record, kind, row)]


def render_rows(records: list[dict], kind: str, renderer: Renderer,
                mask: str = "auto") -> list[Rendered]:
    """Every row of ``kind`` as the sequences training read (two per preference row)."""
    mask = check_mask(kind, mask)
    out = []
    for row, record in enumerate(records):
        for part, text, spans in _row_pieces(record, kind, renderer, mask, row):
            ids, trained = renderer.tokens(text, spans)
            out.append(Rendered(row, part, ids, trained))
    return out


def trained_logprobs(lm, rendered: Sequence[Rendered], **options) -> list[np.ndarray]:
    """log p of each sequence's trained tokens given everything before them (the rest of the
    conversation as context), from the scoring engine; the first token, which has no context
    (the template's own start), is never among them."""
    from core.scoring import score_token_ids

    scores = score_token_ids(lm, [r.ids for r in rendered], add_bos=False, **options)
    return [s.logprobs[r.trained[s.first_scored:]] for s, r in zip(scores, rendered)]
