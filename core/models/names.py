"""Model names that cannot be taken for another: Unicode-normal (NFKC), letters of one script,
and no lookalike of a reserved name (``check_lookalike``).

A name is shown on every page and picked from lists, so ``smоllm2`` with a Cyrillic "о" must
not pass for the built-in model. Three rules, each simple enough to reason about:

* NFKC: the compatibility forms (fullwidth ｄｅｍｏ, ligatures, superscripts) are refused, with
  the plain form to use instead.
* One script: a name's letters all come from one script (Han, Hiragana and Katakana count as
  one), so no single letter can be swapped for a twin from another alphabet.
* Skeletons: what is left are names written wholly in a script with Latin twins (Cyrillic
  ``ѕmоӏӏм2``, Cherokee ``ꮪꮇoꮮꮮꮇ2``), in other case (``SMOLLM2``), in small capitals
  (``ꜱᴍollm2``) or with ASCII twins (``sm0llm2``, ``smoIlm2``, ``smoılm2``). A name's skeleton
  (accents dropped, case folded, small capitals made the letter they name, each common twin
  mapped to the Latin letter it imitates: Unicode's UTS #39 idea, the Cherokee twins from its
  confusables.txt) may not equal a reserved name's once punctuation is set aside
  (``smollm2.``, ``smollm2_``, ``ns.name`` for ``ns:name``), nor start with a reserved
  namespace (``name:``), unless the name is that reserved name itself. Another punctuation
  before a namespace's word (``ns-finetune``) is a name of its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from core.errors import UserError

# The letters (after case folding) most often used as twins of Latin ones: Cyrillic, Greek,
# Armenian, IPA/Latin extensions; digits and "I" that pass for letters in ASCII itself.
_TWINS = str.maketrans(dict(pair for pair in (
    "аa вb гr ԁd еe ɡg һh іi ӏl јj кk мm нh оo пn рp ԛq ѕs тt хx уy үy ьb ъb шw щw ԝw цu иu"
    " αa βb γy εe ηn ιi κk μu νv οo πn ρp σo ςc τt υu χx ωw"
    " սu օo ցg հh ոn"
    " ɑa ıi ȷj ɩi ʟl ℓl øo đd ħh łl"
    " Ꭺa Ꮟb Ᏼb Ꮯc Ꮷd Ꭰd Ꭼe Ꮐg Ᏻg Ꮒh Ꮋh Ꭵi Ꭻj Ꮶk Ꮮl Ꮇm Ꭴo Ꮲp Ꮁr Ꭱr Ꮢr Ꮪs Ꮥs Ꭲt Ꮏt Ꮩv"
    " Ꮃw Ꮤw Ꮗw Ꭹy Ꮍy Ꮓz"   # Cherokee (its small letters fold to these)
    " 0o 1l il".split())))
_NAMED_LETTER = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])")   # NFKD keeps these
_PUNCTUATION = re.compile(r"[.:@+/\-_]")   # a name's punctuation (``NAME_CHARACTERS``)
_SEQUENCES = (("rn", "m"), ("vv", "w"), ("cl", "d"))
_ONE_SCRIPT = {"CJK": "HAN", "HIRAGANA": "HAN", "KATAKANA": "HAN"}


def skeleton(name: str) -> str:
    """What ``name`` looks like, roughly: its accents dropped, small capitals made letters, its
    case folded and each twin of a Latin letter made that letter (``ѕmоӏӏм2``, ``ꜱᴍollm2``,
    ``SMOLLM2`` and ``sm0llm2`` -> ``smollm2``)."""
    text = "".join(_named_letter(c) for c in unicodedata.normalize("NFKD", name)
                   if not unicodedata.combining(c))
    text = text.casefold().translate(_TWINS).translate(_TWINS)   # twice: ı -> i -> l
    for sequence, letter in _SEQUENCES:
        text = text.replace(sequence, letter)
    return text


def _named_letter(c: str) -> str:
    """The Latin letter a small capital names (``ᴍ`` -> ``M``), else ``c``."""
    found = _NAMED_LETTER.fullmatch(unicodedata.name(c, ""))
    return found.group(1) if found else c


def _bare(shape: str) -> str:
    """A skeleton without its punctuation: ``ns.name`` and ``smollm2_`` pass for ``ns:name``
    and ``smollm2``."""
    return _PUNCTUATION.sub("", shape)


def scripts(name: str) -> list[str]:
    """The scripts of ``name``'s letters (from their Unicode names: LATIN, CYRILLIC, ...)."""
    found = {unicodedata.name(c, "UNKNOWN").split(" ")[0].split("-")[0] for c in name
             if unicodedata.category(c).startswith("L")}
    return sorted({_ONE_SCRIPT.get(script, script) for script in found})


def check_lookalike(name: str, reserved: Iterable[str]) -> None:
    """A one-line ``UserError`` if ``name`` is not NFKC, mixes scripts, or looks like one of
    the ``reserved`` names (or starts like a reserved ``prefix:`` namespace) without being it."""
    normal = unicodedata.normalize("NFKC", name)
    if normal != name:
        raise UserError(f"model name {ascii(name)} is not in Unicode's normal form (NFKC): "
                        f"write it {normal!r}")
    if len(found := scripts(name)) > 1:
        raise UserError(f"model name {ascii(name)} mixes letters of {' and '.join(found)}, as a "
                        "lookalike of another name would: write it in one script")
    reserved = set(reserved)
    namespaces = {r.split(":")[0] + ":" for r in reserved if ":" in r}
    shape = skeleton(name)
    for other in sorted(reserved - {name}):
        if _bare(shape) == _bare(skeleton(other)):
            raise UserError(f"model name {ascii(name)} looks like the built-in {other!r}: "
                            "pick a name that cannot be taken for it")
    for prefix in sorted(namespaces):
        if shape.startswith(skeleton(prefix)) and not name.startswith(prefix):
            raise UserError(f"model name {ascii(name)} looks like a {prefix} name, reserved "
                            "for the built-in models: pick another")
