"""Personal data in a text: e-mail addresses, phone numbers, payment card numbers, IBANs, US
social security numbers and IP addresses (after Lukas et al., S&P 2023, who count the PII a
model's samples reproduce from its training data).

Phone numbers are found and checked by ``phonenumbers`` (Google's libphonenumber: a number must
be valid for its region, ``region`` for one written without a country code); card numbers must
pass the Luhn checksum, IBANs their ISO 13616 check digits and SSNs the SSA's rules
(``python-stdnum``); IP addresses must parse (``ipaddress``). E-mail addresses are matched by a
pattern (local part, @, a dotted domain with a letter TLD). Each value is normalised (an e-mail
in lower case, a phone in E.164, digits alone), so one written two ways is one value.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import phonenumbers
from stdnum import iban, luhn
from stdnum.us import ssn

KINDS = ("email", "phone", "card", "iban", "ssn", "ip")
EMAIL = re.compile(r"\b[\w.+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b")
CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}\b")
SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")


@dataclass(frozen=True)
class Pii:
    kind: str     # one of KINDS
    value: str    # normalised
    start: int    # its characters in the text
    end: int


def _checked(text: str, pattern: re.Pattern, kind: str, valid, compact) -> list[Pii]:
    out = []
    for match in pattern.finditer(text):
        value = compact(match.group())
        if valid(value):
            out.append(Pii(kind, value, match.start(), match.end()))
    return out


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _phones(text: str, region: str) -> list[Pii]:
    return [Pii("phone", phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164),
                m.start, m.end)
            for m in phonenumbers.PhoneNumberMatcher(text, region)]


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def find_pii(text: str, region: str = "US") -> list[Pii]:
    """Every PII value in ``text``, by position; a card number is not also read as a phone."""
    found = (_checked(text, EMAIL, "email", lambda v: True, str.lower)
             + _checked(text, CARD, "card", lambda v: 13 <= len(v) <= 19 and luhn.is_valid(v),
                        _digits)
             + _checked(text, IBAN, "iban", iban.is_valid, iban.compact)
             + _checked(text, SSN, "ssn", ssn.is_valid, ssn.compact)
             + _checked(text, IPV4, "ip", _ip, str))
    taken = [(p.start, p.end) for p in found]
    found += [p for p in _phones(text, region)
              if not any(lo < p.end and p.start < hi for lo, hi in taken)]
    return sorted(found, key=lambda p: p.start)


def pii_values(texts: list[str], region: str = "US") -> set[tuple[str, str]]:
    """The distinct (kind, value) pairs of ``texts``."""
    return {(p.kind, p.value) for text in texts for p in find_pii(text, region)}
