"""A fine-tuner's rows as the tokens training read, and the tokens it learnt from.

TRL's ``SFTTrainer`` and ``DPOTrainer`` take four kinds of rows (``core.readers.rows``): language
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
from pathlib import Path
from typing import Literal

import numpy as np

from core import paths
from core.readers.data import data_file, read_records, read_table
from core.readers.rows import as_turns, cell, pieces, plain_texts, table_kind
from core.errors import DataError
from core.specs import param

MASKS = ("auto", "all", "assistant", "completion")
DEFAULT_MASK = {"text": "all", "messages": "assistant", "prompt-completion": "completion",
                "preference": "completion"}
MaskName = Literal[MASKS]
MASK_WORDS = {"all": "every token", "assistant": "the assistant's turns",
              "completion": "the completions"}
MAX_TEMPLATE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Rendered:
    """One sequence training read: its token ids and, per token, whether its loss was trained."""

    row: int                  # the row of the table it came from
    part: str                 # "" or, for a preference row, "chosen" / "rejected"
    text: str                 # the rendered row
    ids: list[int]
    trained: np.ndarray       # bool, one per id

    @property
    def n_trained(self) -> int:
        return int(self.trained.sum())


def check_mask(kind: str, mask: str) -> str:
    """The mask ``mask`` means for rows of ``kind`` (``auto``: TRL's default), or a DataError."""
    if mask not in MASKS:
        raise DataError(f"the trained-token mask must be one of {', '.join(MASKS)}, not {mask!r}")
    chosen = DEFAULT_MASK[kind] if mask == "auto" else mask
    allowed = {"all", DEFAULT_MASK[kind]}
    if chosen not in allowed:
        raise DataError(f"{kind} rows have no {chosen} tokens: use the mask "
                        f"{' or '.join(sorted(allowed | {'auto'}))}")
    return chosen


def mask_param(page: str = "main"):
    """The trained-token mask of a config reading a fine-tuner's rows."""
    return param("auto", widget="radio", label="trained tokens", page=page,
                 help="the tokens whose scores count, the rest of a row being context: auto "
                      "(TRL's default for the rows: the assistant's turns of messages, the "
                      "completions of prompt-completion and preference rows, every token of a "
                      "text), all (a run with TRL's assistant_only_loss=False), assistant, "
                      "completion")


def template_param():
    """The chat template of a config reading conversations, for a model without its own."""
    return param("", widget="text_area", label="chat template", page="advanced",
                 help="for a base model with no template of its own: the Jinja chat template "
                      "training rendered the conversations with (its text, or a .jinja file's "
                      "path); empty: the model's own")


def read_template(value: str) -> str | None:
    """A typed template, or the text of the .jinja file ``value`` names; None when empty."""
    value = value.strip()
    if not value or "{" in value:
        return value or None
    path = Path(value).expanduser()
    paths.check_readable(path)
    if not path.is_file() or path.stat().st_size > MAX_TEMPLATE_BYTES:
        raise DataError(f"{path.name}: the chat template must be a template's text or a .jinja "
                        f"file of at most {MAX_TEMPLATE_BYTES // 1024} KB")
    return path.read_text(encoding="utf-8", errors="replace")


def no_template(model_name: str) -> DataError:
    """The error of rows to render for a model whose tokenizer has no chat template."""
    return DataError(f"{model_name} has no chat template, so conversations cannot be rendered "
                     "as it was trained on them: give its template (a .jinja file, "
                     "chat_template) or use the chat model's own tokenizer")


class Renderer:
    """Renders rows with one tokenizer and template; ``template`` overrides the tokenizer's."""

    def __init__(self, tokenizer, template: str | None = None, model_name: str = "the model"):
        self.tokenizer, self.template, self.model_name = tokenizer, template, model_name

    def render(self, turns: list[dict], *, prompt: bool = False) -> str:
        if not (self.template or getattr(self.tokenizer, "chat_template", None)):
            raise no_template(self.model_name)
        try:
            return self.tokenizer.apply_chat_template(
                turns, chat_template=self.template, tokenize=False, add_generation_prompt=prompt)
        except Exception as err:  # noqa: BLE001 - the template's own (Jinja, raise_exception)
            raise DataError(f"the chat template could not render a row: {err}") from None

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
                raise DataError("the chat template does not render a conversation as its turns "
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


def _completion(renderer: Renderer, prompt, completion, mask: str) -> tuple[str, list]:
    """The rendered prompt and completion and the spans of what training learnt from."""
    if isinstance(prompt, str) and isinstance(completion, str):
        eos = renderer.tokenizer.eos_token or ""
        full = prompt + completion + ("" if completion.endswith(eos) else eos)
        return full, [(0 if mask == "all" else len(prompt), len(full))]
    full, spans = renderer.conversation(prompt + completion, len(prompt))
    return full, [(0, len(full))] if mask == "all" else spans


def _row_pieces(record: dict, kind: str, renderer: Renderer, mask: str, row: int) -> list[tuple]:
    """(part, rendered text, trained character spans) of one row."""
    if kind == "text":
        text = cell(record["text"])
        if not isinstance(text, str):
            raise DataError(f"row {row + 1}: text must be a string")
        return [("", text, [(0, len(text))])]
    if kind == "messages":
        turns = as_turns(record["messages"], "messages", row)
        if mask == "assistant":
            return [("", *renderer.conversation(turns, 0))]
        full = renderer.render(turns)
        return [("", full, [(0, len(full))])]
    return [(part, *_completion(renderer, prompt, completion, mask))
            for part, prompt, completion in pieces(record, kind, row)]


def render_rows(records: list[dict], kind: str, renderer: Renderer,
                mask: str = "auto") -> list[Rendered]:
    """Every row of ``kind`` as the sequences training read (two per preference row)."""
    mask = check_mask(kind, mask)
    out = []
    for row, record in enumerate(records):
        for part, text, spans in _row_pieces(record, kind, renderer, mask, row):
            ids, trained = renderer.tokens(text, spans)
            out.append(Rendered(row, part, text, ids, trained))
    return out


def trained_logprobs(lm, rendered: Sequence, **options) -> list[np.ndarray]:
    """log p of each sequence's trained tokens given everything before them (the rest of the
    conversation as context), from the scoring engine; the first token, which has no context
    (the template's own start), is never among them. ``rendered``: each with ``ids`` and
    ``trained`` (a ``Rendered``, or a sample read from one)."""
    from core.scoring import score_token_ids

    scores = score_token_ids(lm, [list(r.ids) for r in rendered], add_bos=False, **options)
    return [s.logprobs[np.asarray(r.trained, dtype=bool)[s.first_scored:]]
            for s, r in zip(scores, rendered)]


@dataclass
class RowsTable:
    """A data file's records and their dataset type, read before any model loads."""

    records: list[dict]
    kind: str
    csv_rows: bool           # numbered as a spreadsheet does (the header is row 1)

    @property
    def rendered(self) -> bool:
        """Whether its rows go through the chat template (anything but plain texts)."""
        return self.kind != "text"

    def render(self, lm, *, mask: str = "auto", template: str = "") -> list[Rendered]:
        """Each sequence training read, rendered with ``lm``'s template (or ``template``)."""
        renderer = Renderer(lm.tokenizer, read_template(template), lm.name)
        return render_rows(self.records, self.kind, renderer, mask)

    def labelled(self, rendered: list[Rendered]) -> list[dict]:
        """Each sequence's row, its text the rendered one (the row's labels kept)."""
        return [dict(self.records[r.row], text=r.text) for r in rendered]

    def unrendered(self) -> list[dict]:
        """Each sequence's row, its text its turns' contents (``plain_texts``): a preview."""
        return [dict(self.records[row], text=text)
                for row, text in plain_texts(self.records, self.kind)]

    def note(self, sequences: Sequence, mask: str, model_name: str) -> str:
        """What was read and which tokens are scored (``sequences``: with ids and trained)."""
        trained = sum(sum(s.trained) for s in sequences)
        total = sum(len(s.ids) for s in sequences)
        return (f"{len(self.records)} {self.kind} rows, rendered with {model_name}'s chat "
                f"template; scored on {MASK_WORDS[check_mask(self.kind, mask)]} ({trained:,} of "
                f"{total:,} tokens), the rest of each row as context.")


def read_rows(source: str, *, labels: Sequence[str], mask: str = "auto") -> RowsTable:
    """The records of ``source`` (holding at least ``labels[0]``), their dataset type read
    from the columns other than ``labels`` and checked against ``mask``."""
    table = read_records(source, required=tuple(labels[:1]))
    path = data_file(source)
    kind = table_kind(table.columns, path.name, labels)
    check_mask(kind, mask)
    return RowsTable(table.to_dict("records"), kind, path.suffix.lower() == ".csv")


def source_sequences(source: str, lm, *, mask: str = "auto",
                     template: str = "") -> list[Rendered] | None:
    """The sequences training read from a fine-tuner's data file (conversations,
    prompt-completion or preference rows), rendered with ``lm``'s template and masked; None for
    plain texts (a .txt, a list of strings, records with a ``text``), which ``read_texts`` reads
    and every token of which is scored."""
    if not holds_rows(source):
        return None
    return read_rows(source, labels=()).render(lm, mask=mask, template=template)


def holds_rows(source: str) -> bool:
    """Whether ``source`` holds a fine-tuner's rows (conversations, prompt-completion or
    preference rows) rather than plain texts (a .txt, a list of strings, records with a
    ``text``)."""
    table = read_table(source)
    return not (isinstance(table, list) or "text" in table.columns)


def describe_source(source: str) -> str:
    """What a data file holds, as a page says it once chosen: its rows' dataset type and the
    tokens scored by default (a fine-tuner's rows), or its count of plain texts."""
    table = read_table(source)
    if isinstance(table, list):
        return f"{len(table):,} plain texts, every token scored"
    kind = table_kind(table.columns, data_file(source).name)
    if kind == "text":
        return f"{len(table):,} records with a text, every token scored"
    return (f"{len(table):,} {kind} rows (TRL's dataset type), rendered with the model's chat "
            f"template; scored by default on {MASK_WORDS[DEFAULT_MASK[kind]]}, the rest as "
            "context")
