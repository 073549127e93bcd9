"""The corpus a natural-identifier audit searches (``core.dp.nid_audit``): plain texts, and a
fine-tuner's rows as training read them.

Plain texts (a .txt, a list of strings, records with a ``text``) are searched whole, and an
identifier is scored after up to ``context_tokens`` tokens before it
(``nid_scoring.identifier_sequences``). A fine-tuner's rows (TRL's ``messages``,
prompt-completion and preference rows: ``core.chat``) are rendered with the target's chat
template; identifiers are searched only inside the tokens training learnt from (``--mask``:
the assistant's turns, the completions), and each is scored after the whole row before it,
tokenised as training read it (``nid_scoring.row_sequences``): s = log p(identifier tokens |
the conversation up to it), the score the other attacks take of trained tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from core import chat
from core.dp.nid_formats import Found
from core.dp.nid_scoring import identifier_sequences, row_sequences
from core.errors import UserError
from core.readers.data import data_file, read_texts

Ranges = list[tuple[int, int]]


@dataclass
class Corpus:
    """The texts searched, and for each rendered row the character ranges of its trained
    tokens (None: a plain text, searched whole)."""

    texts: list[str] = field(default_factory=list)
    trained: list[Ranges | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def rendered(self) -> bool:
        return any(ranges is not None for ranges in self.trained)

    def sequences(self, tokenizer, audited: Sequence[Found], fresh: Sequence[str],
                  context_tokens: int) -> tuple[list[list[int]], list[int], list[bool]]:
        """The members, then their fresh strings, each in its first occurrence's place: token
        ids, how many of the last are the identifier's, and whether the engine prepends a
        context token (a plain text's window; a rendered row starts with the template's own)."""
        strings = [(f, f.value) for f in audited] + list(zip(audited, fresh))
        places = [(self.texts[f.text], f.start, len(f.value), value) for f, value in strings]
        plain = [self.trained[f.text] is None for f, _ in strings]
        out: list = [None] * len(strings)
        for flag in (True, False):
            index = [i for i, p in enumerate(plain) if p == flag]
            if not index:
                continue
            chosen = [places[i] for i in index]
            made = (identifier_sequences(tokenizer, [(text[:start], value) for text, start, _,
                                                     value in chosen], context_tokens)
                    if flag else row_sequences(tokenizer, chosen))
            for i, ids, length in zip(index, *made):
                out[i] = (ids, length)
        return [ids for ids, _ in out], [length for _, length in out], plain


def trained_ranges(tokenizer, rendered: chat.Rendered) -> Ranges:
    """The character ranges of ``rendered``'s runs of trained tokens (its first token, which
    has no context, left out: it is never scored)."""
    encoded = tokenizer(rendered.text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = np.array(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    trained = np.asarray(rendered.trained, dtype=bool).copy()
    trained[:1] = False
    edges = np.flatnonzero(np.diff(np.concatenate([[0], trained.astype(np.int8), [0]])))
    return [(int(offsets[lo, 0]), int(offsets[hi - 1, 1])) for lo, hi in edges.reshape(-1, 2)]


def read_corpus(sources: Sequence[str], target: Callable, *, mask: str,
                template: str) -> Corpus:
    """Every source's texts; ``target()`` (the loaded model, whose tokenizer and template
    render rows) is called only for a source of rows."""
    if not sources:
        raise UserError("give a corpus: the training texts that hold the identifiers")
    corpus = Corpus()
    for source in sources:
        if not chat.holds_rows(source):
            texts = read_texts(source)
            corpus.texts += texts
            corpus.trained += [None] * len(texts)
            continue
        lm = target()
        rows = chat.read_rows(source, labels=(), mask=mask)
        rendered = rows.render(lm, mask=mask, template=template)
        corpus.texts += [r.text for r in rendered]
        corpus.trained += [trained_ranges(lm.tokenizer, r) for r in rendered]
        corpus.notes.append(f"{data_file(source).name}: {rows.note(rendered, mask, lm.name)} "
                            "Identifiers are searched in the trained tokens only, each scored "
                            "after its row up to it.")
    return corpus
