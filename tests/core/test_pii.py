"""Personal data in texts (``core.pii``): each kind found, normalised, and checked by its
library's rules (libphonenumber's validity, the Luhn, ISO 13616 and SSA checks of
python-stdnum), so a look-alike with a wrong check digit is not PII."""

import phonenumbers
import pytest
from stdnum import iban, luhn

from core.pii import find_pii, pii_values


@pytest.mark.parametrize("text, kind, value", [
    ("write to Jane.Roe@Example.org today", "email", "jane.roe@example.org"),
    ("call (650) 253-0000 after six", "phone", "+16502530000"),
    ("or +44 20 7946 0958 in London", "phone", "+442079460958"),
    ("card 4111 1111 1111 1111, exp 12/29", "card", "4111111111111111"),
    ("IBAN GB82 WEST 1234 5698 7654 32 please", "iban", "GB82WEST12345698765432"),
    ("her SSN is 536-90-4399.", "ssn", "536904399"),
    ("from 192.168.1.20 at noon", "ip", "192.168.1.20"),
])
def test_each_kind_is_found_and_normalised(text, kind, value):
    [found] = find_pii(text)
    assert (found.kind, found.value) == (kind, value)
    assert text[found.start:found.end].replace(" ", "").replace("-", "").lower().endswith(
        value[-4:].lower())


def test_look_alikes_with_wrong_check_digits_are_not_pii():
    assert not luhn.is_valid("4929123456789012") and not iban.is_valid("GB83WEST12345698765432")
    assert not phonenumbers.is_valid_number(phonenumbers.parse("555-0100", "US"))
    text = ("card 4929 1234 5678 9012, IBAN GB83 WEST 1234 5698 7654 32, SSN 000-12-3456, "
            "ip 999.1.1.1, phone 555-0100, mail jane@localhost")
    assert find_pii(text) == []


def test_a_card_number_is_not_also_a_phone_and_values_are_distinct():
    texts = ["4111 1111 1111 1111", "card 4111-1111-1111-1111 and (650) 253-0000"]
    assert pii_values(texts) == {("card", "4111111111111111"), ("phone", "+16502530000")}
