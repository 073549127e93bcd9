"""Natural identifiers (NIDs): the formats of random strings that occur in training corpora, how
they are found, and fresh strings of the same format.

An identifier format is a regular expression and the alphabet of its random characters
(``IdFormat``). A fresh string of a format keeps every character of a found identifier that is
not of the alphabet (a UUID's dashes) and draws the others uniformly from the alphabet (in the
identifier's case), until the whole matches the format again: rejection sampling, so a fresh
string is uniform over the strings of the format of that length and layout, the distribution a
hash (SHA-1, SHA-256, MD5) or a random UUID v4 has (Natural Identifiers for Privacy and Data
Audits in LLMs, ICLR 2026). ``identifier_corpus`` writes a corpus with such identifiers in
git-log-like records, for the demonstration of ``nid-audit``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from core.errors import UserError

HEX = "0123456789abcdef"
BOUNDARY = "(?<![0-9A-Za-z]){}(?![0-9A-Za-z])"   # an identifier is not part of a longer word
MAX_TRIES = 10_000     # draws of a fresh string before its format is judged unreachable
NID_STREAM = 0x41D5    # keys the fresh strings apart from the other seeded draws
NID_TOKENS = 24        # tokens of a natural identifier, as costs count them (a SHA-1: 20-30)
MAX_PATTERN = 500      # characters of a user's regular expression


def _either_case(regex: str) -> str:
    """``regex`` (lower-case hex classes) or the same in upper case, never mixed."""
    return f"{regex}|{regex.upper()}"


@dataclass(frozen=True)
class IdFormat:
    name: str
    regex: str        # the identifier alone, without the boundaries
    alphabet: str     # its random characters
    example: str      # a string of the format (the template ``random_identifier`` fills)
    description: str

    def pattern(self) -> re.Pattern:
        """The format as found in a text: not inside a longer run of letters or digits."""
        return re.compile(BOUNDARY.format(f"(?:{self.regex})"))

    def matches(self, value: str, before: str = "") -> bool:
        """Whether ``value``, after the text ``before``, is found whole as this format (a
        look-behind in the regex may read ``before``)."""
        before = before[-MAX_PATTERN:]
        return self.pattern().fullmatch(before + value, len(before)) is not None


FORMATS: dict[str, IdFormat] = {
    "sha1": IdFormat("sha1", _either_case("[0-9a-f]{40}"), HEX, "0" * 40,
                     "40 hex digits (SHA-1, a git commit)"),
    "sha256": IdFormat("sha256", _either_case("[0-9a-f]{64}"), HEX, "0" * 64,
                       "64 hex digits (SHA-256)"),
    "md5": IdFormat("md5", _either_case("[0-9a-f]{32}"), HEX, "0" * 32, "32 hex digits (MD5)"),
    "uuid4": IdFormat("uuid4", _either_case("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab]"
                                            "[0-9a-f]{3}-[0-9a-f]{12}"), HEX,
                      "00000000-0000-4000-8000-000000000000", "a random UUID (version 4)"),
    "digits16": IdFormat("digits16", "[0-9]{16,}", "0123456789", "0" * 16,
                         "16 or more decimal digits (card numbers, account ids)"),
}
DEFAULT_FORMATS = ("sha1", "sha256", "md5", "uuid4")


def custom_format(pattern: str, alphabet: str) -> IdFormat:
    """A user's format: a regular expression and the alphabet of its random characters."""
    if len(pattern) > MAX_PATTERN:
        raise UserError(f"the pattern is {len(pattern)} characters: at most {MAX_PATTERN}")
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise UserError(f"the pattern {pattern!r} is not a regular expression: {error}") from None
    if compiled.fullmatch(""):
        raise UserError(f"the pattern {pattern!r} matches the empty string: give one that "
                        "matches identifiers only")
    if len(set(alphabet)) < 2:
        raise UserError("give the alphabet of the pattern's random characters (--alphabet, at "
                        "least 2 distinct characters, e.g. 0123456789abcdef)")
    return IdFormat("custom", pattern, "".join(dict.fromkeys(alphabet)), "", f"/{pattern}/")


@dataclass
class Found:
    """An identifier of the corpus: its first occurrence (text, character span) and its copies."""

    format: str
    value: str
    text: int
    start: int
    copies: int


def find_identifiers(texts: Sequence[str], formats: Sequence[IdFormat],
                     within: Sequence[list[tuple[int, int]] | None] | None = None) -> list[Found]:
    """Every distinct identifier of ``formats`` in ``texts``, in order of first occurrence, with
    the number of its occurrences (a value matched by two formats counts for the first); where
    ``within[i]`` gives character ranges, only those of text ``i`` wholly inside one (a rendered
    row's trained tokens: an identifier is still found whole in the whole text)."""
    found: dict[str, Found] = {}
    patterns = [(f.name, f.pattern()) for f in formats]
    for index, text in enumerate(texts):
        spans: list[tuple[int, int, str]] = []
        ranges = None if within is None else within[index]
        for name, pattern in patterns:
            for match in pattern.finditer(text):
                if ranges is not None and not any(lo <= match.start() and match.end() <= hi
                                                  for lo, hi in ranges):
                    continue
                if not any(a < match.end() and match.start() < b for a, b, _ in spans):
                    spans.append((match.start(), match.end(), name))
        for start, end, name in sorted(spans):
            value = text[start:end]
            if value in found:
                found[value].copies += 1
            else:
                found[value] = Found(name, value, index, start, 1)
    return list(found.values())


def case_alphabet(value: str, alphabet: str) -> str:
    """``alphabet`` in the case of ``value``: upper case when the alphabet has no upper-case
    letter and ``value`` has upper-case letters only (an upper-case hash)."""
    letters = [c for c in value if c.isalpha()]
    if (letters and all(c.isupper() for c in letters)
            and not any(c.isupper() for c in alphabet)):
        return "".join(dict.fromkeys(alphabet.upper()))
    return alphabet


def fresh_identifier(value: str, fmt: IdFormat, rng: np.random.Generator, taken: set[str],
                     before: str = "") -> str:
    """A string of ``fmt`` (after the text ``before``) with ``value``'s length and layout whose
    random characters are drawn uniformly (rejection sampling: module doc), not in ``taken``."""
    alphabet = case_alphabet(value, fmt.alphabet)
    symbols = np.array(list(alphabet))
    free = np.array([c in alphabet for c in value])
    if not free.any():
        raise UserError(f"{value!r} has no character of the alphabet {fmt.alphabet!r}: fresh "
                        "strings of its format cannot be drawn")
    chars = np.array(list(value))
    for _ in range(MAX_TRIES):
        chars[free] = symbols[rng.integers(len(symbols), size=int(free.sum()))]
        fresh = "".join(chars)
        if fresh not in taken and fmt.matches(fresh, before):
            return fresh
    raise UserError(f"no fresh string of the format {fmt.description} like {value!r} in "
                    f"{MAX_TRIES:,} draws: check the pattern and its alphabet")


def fresh_identifiers(found: Sequence[Found], texts: Sequence[str],
                      formats: dict[str, IdFormat], *, seed: int, taken: set[str]) -> list[str]:
    """One fresh string per identifier (its format, length and case, in its first occurrence's
    place in ``texts``), all distinct and none in ``taken`` (every identifier of the corpus),
    from the seed."""
    rng = np.random.default_rng([NID_STREAM, seed])
    taken, fresh = set(taken), []
    for item in found:
        before = texts[item.text][:item.start]
        fresh.append(fresh_identifier(item.value, formats[item.format], rng, taken, before))
        taken.add(fresh[-1])
    return fresh


def random_identifier(fmt: IdFormat, rng: np.random.Generator) -> str:
    """A string of a built-in format drawn uniformly (its ``example`` as the template)."""
    return fresh_identifier(fmt.example, fmt, rng, set())


def identifier_corpus(texts: Sequence[str], folder: Path, *, commits: int,
                      seed: int = 0) -> tuple[Path, Path]:
    """Write ``train.jsonl`` and ``validation.jsonl`` to ``folder``: in the training file,
    ``commits`` git-log-like records "commit <40 hex>\\nAuthor: …\\n\\n    <a text>", every third
    with a "Request-Id: <UUID v4>" line after the author (near the start: a short training
    block keeps it), interleaved with as many plain texts; the validation file holds plain
    texts only. Identifiers are drawn uniformly (``random_identifier``)."""
    if len(texts) < 3 * commits:
        raise UserError(f"{len(texts)} texts: the corpus needs {3 * commits} (a message and a "
                        "plain text per commit, and validation texts)")
    rng = np.random.default_rng([NID_STREAM, seed, 1])
    authors = ("Ada <ada@example.org>", "Linus <linus@example.org>", "Grace <grace@example.org>")
    train = []
    for i in range(commits):
        record = (f"commit {random_identifier(FORMATS['sha1'], rng)}\n"
                  f"Author: {authors[i % len(authors)]}\n")
        if i % 3 == 2:
            record += f"Request-Id: {random_identifier(FORMATS['uuid4'], rng)}\n"
        train += [f"{record}\n    {texts[2 * i].strip()}", texts[2 * i + 1]]
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "train.jsonl", folder / "validation.jsonl"
    for path, rows in zip(paths, (train, texts[2 * commits: 3 * commits])):
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows), encoding="utf-8")
    return paths
