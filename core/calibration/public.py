"""Public versus private: whether a row a discovery attack returns occurs in public text.

A differential-rank sequence, an extraction candidate, a sentence at risk or an easy window
that public text of the domain also holds is no evidence that the model memorised private
data: what it shows, a model may have learnt from the domain. Carlini et al. (2021, "Extracting
Training Data from Large Language Models", §6.1) checked their extractions against public data
for the same reason. A row is *public* when, case and spacing aside, it occurs verbatim in the
public sample, or when at least ``PUBLIC_SHARE`` of its word n-grams (n = ``NGRAM``) do.

Attacks take two config fields, ``public_sample = public_sample_param()`` (empty: the public
in-domain sample of their domain calibration, if any) and ``public_rows = public_rows_param()``
(the public rows listed below the private ones, dropped, or left in place), and call
``marked_and_arranged`` on their rows, each of which holds ``public: PublicMark | None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from core.readers.data import FORMATS_HELP, read_texts
from core.specs import param

NGRAM = 5             # words per n-gram
PUBLIC_SHARE = 0.5    # of a row's n-grams in the sample: public
PublicRows = Literal["below", "hidden", "mixed"]


@dataclass
class PublicMark:
    """Whether a row occurs in the public sample: verbatim, or by its share of word n-grams."""

    public: bool
    verbatim: bool       # the whole row, case and spacing aside
    overlap: float       # share of the row's word n-grams (a row shorter than n: 1 if verbatim)


def normalised(text: str) -> str:
    """``text`` case-folded, with every run of white space one space."""
    return " ".join(text.casefold().split())


def _ngrams(words: list[str]) -> list[int]:
    """The hashes of the word n-grams (a set of them holds a large sample in ints, not tuples
    of strings: about a fifth of the memory)."""
    return [hash(tuple(words[i:i + NGRAM])) for i in range(len(words) - NGRAM + 1)]


class PublicSample:
    """The public texts, read once: their normalised text and the set of their word n-grams'
    hashes."""

    def __init__(self, texts: list[str], name: str = ""):
        documents = [normalised(text) for text in texts]
        self.name = name
        self.text = "\n".join(documents)   # a row never matches across two documents
        self.ngrams = {gram for document in documents for gram in _ngrams(document.split())}

    def mark(self, row: str) -> PublicMark:
        """The row's mark: verbatim in a document, else its share of n-grams found. A row
        is searched for verbatim only when every n-gram of its inner words (its first and last
        may be cut words) is in the sample, as a verbatim row's must be."""
        text = normalised(row)
        grams = _ngrams(text.split())
        found = [gram in self.ngrams for gram in grams]
        verbatim = bool(text) and all(found[1:-1]) and text in self.text
        overlap = sum(found) / len(found) if found else float(verbatim)
        return PublicMark(verbatim or overlap >= PUBLIC_SHARE, verbatim, overlap)


def public_sample_param() -> str:
    """A config field: the public text the rows are checked against."""
    return param("", path="data", label="public sample (marks public rows)",
                 help="public text of the domain: each row found in it (verbatim or by half "
                      f"its {NGRAM}-word n-grams, case and spacing aside) is marked public; "
                      f"empty: the public in-domain sample, if given; {FORMATS_HELP}")


def public_rows_param() -> PublicRows:
    """A config field: where the rows marked public go."""
    return param("below", page="advanced", label="public rows",
                 help="rows marked public: below the private ones (each kept in its rank "
                      "order), hidden (dropped), or mixed (in the paper's order)")


def public_source(config: Any) -> str:
    """The file the rows of ``config``'s run are checked against ("" for none)."""
    return (config.public_sample.strip() or getattr(config, "domain_sample", "").strip())


def load_public(config: Any) -> PublicSample | None:
    """The public sample of ``config`` (``public_source``), read; None without one."""
    source = public_source(config)
    return PublicSample(read_texts(source), Path(source).name) if source else None


def mark_rows(rows: list, sample: PublicSample, *, text: Callable[[Any], str]) -> None:
    """Set each row's ``public`` to its mark against ``sample``, read by its ``text``."""
    for row in rows:
        row.public = sample.mark(text(row))


def arranged(items: list, how: PublicRows, *,
             public: Callable[[Any], bool] = lambda row: row.public.public) -> list:
    """``items`` as ``how`` says: the private ones, then the public ones, each in its order
    ("below"); the private ones only ("hidden"); or as they are ("mixed")."""
    private = [item for item in items if not public(item)]
    return {"below": private + [item for item in items if public(item)], "hidden": private,
            "mixed": list(items)}[how]


def public_note(found: int, total: int, sample: PublicSample, how: PublicRows,
                what: str = "rows") -> str:
    """One line: how many of ``total`` rows the public sample holds, and where they went."""
    where = {"below": "listed below the private ones", "hidden": "hidden",
             "mixed": "left in place"}[how]
    return (f"{found} of {total} {what} also occur in the public sample {sample.name} "
            f"({where}): what they show, the model may have learnt from the domain")


def marked_and_arranged(rows: list, sample: PublicSample | None, how: PublicRows, *,
                        text: Callable[[Any], str], notes: list[str],
                        what: str = "rows") -> list:
    """``mark_rows``, then ``arranged``, with a note counting the public rows; without a
    sample, ``rows`` as they are."""
    if sample is None:
        return rows
    mark_rows(rows, sample, text=text)
    notes.append(public_note(sum(row.public.public for row in rows), len(rows), sample, how,
                             what))
    return arranged(rows, how)


def public_label(mark: PublicMark | None) -> str:
    """A row's mark in words: "public (verbatim)", "public (60% of 5-grams)" or "private"."""
    if mark is None:
        return ""
    if not mark.public:
        return "private"
    return "public (verbatim)" if mark.verbatim else f"public ({mark.overlap:.0%} of {NGRAM}-grams)"


def public_column(marks: list[PublicMark | None]) -> list[str] | None:
    """Each row's ``public_label``; None when no row is marked (no public sample was given)."""
    return [public_label(mark) for mark in marks] if any(marks) else None


def with_public(headers: tuple[str, ...], rows: list[tuple], marks: list[PublicMark | None]
                ) -> tuple[tuple[str, ...], list[tuple]]:
    """A table's headers and rows with a "public sample" column when its rows are marked."""
    labels = public_column(marks)
    if labels is None:
        return headers, rows
    return (*headers, "public sample"), [(*row, label) for row, label in zip(rows, labels)]
