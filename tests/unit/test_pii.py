"""The detector: what counts as personal data, and what must be left alone."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable

import pytest

from waystone._privacy.cards import card_shaped
from waystone._privacy.pii import Detector, Pattern, iban_ok, luhn_ok

D = Detector()


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("mail ana@example.com now", "email", "ana@example.com"),
        ("call +1 (415) 555-0100 today", "phone", "+1 (415) 555-0100"),
        ("or 415.555.0100.", "phone", "415.555.0100"),
        ("card 4111 1111 1111 1111 ok", "card", "4111 1111 1111 1111"),
        ("card 4111-1111-1111-1111", "card", "4111-1111-1111-1111"),
        ("iban DE89 3704 0044 0532 0130 00 x", "iban", "DE89 3704 0044 0532 0130 00"),
        ("GB82WEST12345698765432", "iban", "GB82WEST12345698765432"),
    ],
)
def test_finds_personal_data(text: str, kind: str, value: str) -> None:
    assert [(f.kind, f.value) for f in D.find(text)] == [(kind, value)]


@pytest.mark.parametrize(
    "text",
    [
        "card 4111111111111112 fails Luhn",
        "ws-refund-1234567890123456abcdef and refund-3f1c2a9d0b7e",
        "amount 120.00 for order 1001 at 2026-11-30T14:18:23.123817+00:00",
        "1f1ecc8f-b9a4-65db-bfff-4553988d10b6",
        "sha256:863a2acab363ddae4d5f916f5f887b2d",
        "ws-notify_customer-01e057b5b4353d9d198c3b7e4a79fb95585e1534",
        "<pii:email:abcdefghijklmnopabcd>",
    ],
)
def test_leaves_ids_amounts_times_and_tokens_alone(text: str) -> None:
    assert list(D.find(text)) == []


def found(text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.value) for f in D.find(text)]


def test_a_card_number_given_as_a_json_number_is_found() -> None:
    assert D.number_kind(4111111111111111) == "card"
    assert D.number_kind(4000056655665556, "payment") == "card"
    assert D.number_kind(1111111111111117, "cardNumber") == "card"  # a card key: any network


def test_a_phone_number_given_as_a_json_number_under_a_phone_key_is_found() -> None:
    for key in ("phone", "customerPhone", "mobile_number", "tel", "msisdn"):
        assert D.number_kind(4155550100, key) == "phone", key
    assert D.number_kind(23456789, "phone") == "phone"  # 8 digits, a local number


def test_json_numbers_that_are_counts_ids_amounts_or_times_are_left_alone() -> None:
    for number, key in [
        (1001, "order_id"),
        (12000, "amount"),
        (3, "step"),
        (1764512303, "deadline"),  # epoch seconds: as many digits as a phone number
        (1764512303123, "created_ms"),  # epoch milliseconds: a card's length
        (1764512303123456789, None),  # epoch nanoseconds
        (4155550100, "count"),
        (4111111111111112, "card"),  # fails Luhn
        (1001, "phone"),  # too short for a phone number
        (4155550100, "hotel"),
    ]:
        assert D.number_kind(number, key) is None, (number, key)


def test_a_card_number_at_the_end_of_a_longer_word_is_found() -> None:
    assert found("card4000056655665556") == [("card", "4000056655665556")]
    assert found("ref:visa4111111111111111, ok") == [("card", "4111111111111111")]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ref_4111111111111111", "4111111111111111"),
        ("id-4111111111111111", "4111111111111111"),
        ("4111111111111111_x", "4111111111111111"),
        ("4111111111111111-x and 4111111111111111x", "4111111111111111"),
        ("card_4111 1111 1111 1111", "4111 1111 1111 1111"),  # not its last 12 digits
        ("ref_4111-1111-1111-1111_z", "4111-1111-1111-1111"),
        ("id_378282246310005", "378282246310005"),  # an Amex number, 15 digits
        ("карта4111111111111111", "4111111111111111"),
        ("orders/4111111111111111", "4111111111111111"),
        # among other groups of digits, in a card's usual grouping
        ("x 12 4111 1111 1111 1111", "4111 1111 1111 1111"),
        ("ref-12-4111-1111-1111-1111", "4111-1111-1111-1111"),
        ("4111 1111 1111 1111 12", "4111 1111 1111 1111"),
        ("1234 4111 1111 1111 1111 99", "4111 1111 1111 1111"),
        ("3782 822463 10005 1", "3782 822463 10005"),
        ("id 12-4111111111111111", "4111111111111111"),
        ("ref_4111_1111_1111_1111_x", "4111_1111_1111_1111"),
        # an idempotency key a caller made from a card number holds that card number
        ("ws-refund-4000056655665556", "4000056655665556"),
    ],
)
def test_a_card_number_joined_to_a_word_is_found(text: str, value: str) -> None:
    assert set(found(text)) == {("card", value)}


@pytest.mark.parametrize(
    "text",
    [
        "ref_4111111111111112",  # fails Luhn
        "ws-refund-deadbeef4111111111111111",  # glued to a word of hex digits: a digest
        "0.4111111111111111 and 1.4111111111111111",  # a fraction's digits
        "4111111111111111.5",  # an amount
        "tel:+4111111111111111",  # a country code follows "+": too long for a phone
        "run_12345678901234567890123",  # too many digits for a card
        "1 2 3 4 5 6 7 8 9 10 11 12 13",  # groups, but no card's grouping
        "2019 2020 2021 2022 2023 2024 2025",
        "report_2026_11_30_140100 and 2026-11-30-140100",  # Luhn-valid, but a date and time
    ],
)
def test_digits_joined_to_a_word_that_are_no_card_are_left_alone(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "id,qty,card\n7,2,4111111111111111",  # a CSV row
        "4111111111111111,12",
        "[3,4111111111111111]",  # a list of numbers
        "cards: 4111111111111111,4000056655665556",
    ],
)
def test_a_card_number_after_or_before_a_comma_is_found(text: str) -> None:
    assert found(text) and all(kind == "card" for kind, _ in found(text))
    assert "4111111111111111" in {value for _, value in found(text)}


@pytest.mark.parametrize(
    "text",
    ["1,234.56", "total 12,345,678,901,234.56 EUR", "1,234,567,890,123,456", "0,75 and 3,5"],
)
def test_amounts_with_commas_are_left_alone(text: str) -> None:
    assert found(text) == []


def _uuid1(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=1))


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _uuid7(rng: random.Random) -> str:
    # 48 bits of milliseconds since the epoch (2020 to 2040), then random bits
    ms = rng.randrange(1_577_836_800_000, 2_208_988_800_000)
    v4 = uuid.UUID(int=ms << 80 | rng.getrandbits(80), version=4).int  # its variant bits
    return str(uuid.UUID(int=v4 ^ (4 ^ 7) << 76))  # version 7 (unknown to Python 3.11)


@pytest.mark.parametrize("make", [_uuid1, _uuid4, _uuid7])
def test_no_part_of_a_uuid_is_taken_for_a_card_number(
    make: Callable[[random.Random], str],
) -> None:
    rng = random.Random(23)
    ids = [make(rng) for _ in range(20_000)]
    # as they stand in state: alone, prefixed, upper-case, with underscores
    shapes: list[Callable[[str], str]] = [
        lambda u: u,
        lambda u: f"run-{u}",
        lambda u: f"thread_{u.upper()}",
        lambda u: u.replace("-", "_"),
    ]
    forms = [shapes[i % len(shapes)](u) for i, u in enumerate(ids)]
    hits = [(text, found(text)) for text in forms if found(text)]
    assert hits == []


def test_the_uuid_the_review_found_is_left_alone() -> None:
    assert found("8b5205ef-6994-4728-9915-60d588d12c94") == []
    assert found("a1b2-4111111111111111") == []  # a token of hex words
    assert found("bad-4111111111111111") == [("card", "4111111111111111")]  # no hex id


@pytest.mark.parametrize(
    ("digits", "shaped"),
    [
        ("4111111111111111", True),
        ("4111-1111-1111-1111", True),
        ("3782_822463_10005", True),  # Amex, 4-6-5
        ("4222222222222", True),  # Visa, 13 digits
        ("6011_1111_1111_1111_117", True),  # 19 digits, 4-4-4-4-3
        ("1764512303123", False),  # no network starts with 1: ms since the epoch
        ("7248198128_320529", False),
        ("2026-607712-2415321", False),  # 17 digits
        ("41111111_11111111", False),  # no card's grouping
    ],
)
def test_the_shape_of_a_card_number(digits: str, shaped: bool) -> None:
    assert card_shaped(digits) is shaped


def _backup(rng: random.Random) -> str:
    day = f"{rng.randrange(1990, 2040)}{rng.randrange(1, 13):02}{rng.randrange(1, 32):02}"
    return f"backup_{day}_{rng.randrange(24):02}{rng.randrange(60):02}{rng.randrange(60):02}.tar"


def _event(rng: random.Random) -> str:
    return f"evt_{rng.randrange(1_000_000_000_000, 2_000_000_000_000)}"  # ms since the epoch


def _transaction(rng: random.Random) -> str:
    return f"tx_{rng.randrange(10**9, 10**10)}_{rng.randrange(10**5, 10**6)}"


def _order(rng: random.Random) -> str:
    middle, last = rng.randrange(10**5, 10**6), rng.randrange(10**6, 10**7)
    return f"order {rng.randrange(1990, 2040)}-{middle}-{last}"


@pytest.mark.parametrize("make", [_backup, _event, _transaction, _order])
def test_ids_made_of_numbers_and_timestamps_are_left_alone(
    make: Callable[[random.Random], str],
) -> None:
    rng = random.Random(23)
    hits = [(text, found(text)) for text in (make(rng) for _ in range(5_000)) if found(text)]
    assert hits == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("name . person @ example . com", "name . person @ example . com"),
        ("x@example .com", "x@example .com"),
        ("x @example.com", "x @example.com"),
        ("x@ example.com", "x@ example.com"),
        ("x @ mail . example.co.uk", "x @ mail . example.co.uk"),
        ("NAME . PERSON @ EXAMPLE . COM", "NAME . PERSON @ EXAMPLE . COM"),
        ("x @пример.рф", "x @пример.рф"),
        ("mail me: name . person @ example . com, thanks", "name . person @ example . com"),
    ],
)
def test_an_email_with_spaces_around_its_at_or_dots_is_found(text: str, value: str) -> None:
    assert found(text) == [("email", value)]


@pytest.mark.parametrize(
    "text",
    [
        "ping @ana.lopez",
        "decorate it with @functools.wraps or @app.get",
        "return x\n@torch.no_grad()",  # "no" is a country's domain, "no_grad" is not
        "see x @example.community",  # not a known top-level domain, nor a prefix of one
        "x@example. com",  # a dot that ends a sentence
    ],
)
def test_mentions_and_decorators_are_not_spaced_emails(text: str) -> None:
    assert found(text) == []


def test_a_sentence_before_an_email_is_not_taken_for_its_local_part() -> None:
    assert found("Thanks. ana@example.com") == [("email", "ana@example.com")]
    assert found("Thanks. ana @example.com") == [("email", "ana @example.com")]


def test_an_iban_joined_to_a_word_is_found() -> None:
    assert found("iban_DE89370400440532013000") == [("iban", "DE89370400440532013000")]
    assert found("ref-DE89 3704 0044 0532 0130 00") == [("iban", "DE89 3704 0044 0532 0130 00")]
    assert found("gb82west12345698765432_x") == [("iban", "gb82west12345698765432")]
    assert found("x-be12ab34cd56ef78 x_de00370400440532013000") == []  # check digits fail


def test_a_lower_case_iban_is_found() -> None:
    assert found("iban de89 3704 0044 0532 0130 00 for ana") == [
        ("iban", "de89 3704 0044 0532 0130 00")
    ]
    assert found("gb82west12345698765432") == [("iban", "gb82west12345698765432")]


def test_an_email_with_an_internationalised_domain_is_found() -> None:
    assert found("mail ana@exämple.de now") == [("email", "ana@exämple.de")]
    assert found("ana@пример.рф") == [("email", "ana@пример.рф")]
    assert found("ana@xn--e1afmkfd.xn--p1ai") == [("email", "ana@xn--e1afmkfd.xn--p1ai")]
    assert found("josé@example.com") == [("email", "josé@example.com")]
    assert found("ana@exa\u0308mple.de") == [("email", "ana@exa\u0308mple.de")]  # decomposed


def test_a_spaced_out_or_bracketed_email_is_found() -> None:
    assert found("write to ana @ example.com today") == [("email", "ana @ example.com")]
    assert found("ana [at] example [dot] com") == [("email", "ana [at] example [dot] com")]
    assert found("ana(at)example.com") == [("email", "ana(at)example.com")]


def test_an_8_digit_local_phone_number_is_found() -> None:
    assert found("call 2345 6789 today") == [("phone", "2345 6789")]
    assert found("ring 23 45 67 89.") == [("phone", "23 45 67 89")]
    assert found("or 9123-4567") == [("phone", "9123-4567")]


def test_a_date_with_its_time_is_not_a_phone_number() -> None:
    # str(datetime): a space, not a "T", between the date and the time
    assert found("at 2026-11-30 14:18:23.123817+00:00") == []
    assert found("on 30.11.2026 14:18, then 14:18:23 1764512303") == [("phone", "1764512303")]


def test_a_decimal_amount_is_not_a_phone_number() -> None:
    assert found("amount 12345678.00 EUR, 1 234 567.89 USD") == []


def test_an_international_phone_number_is_not_a_card_number() -> None:
    assert found("tel:+4915112345678") == [("phone", "+4915112345678")]


@pytest.mark.parametrize(
    "text",
    [
        '{"order_id": "1001", "amount": "120.00", "currency": "EUR"}',
        "on 2026-11-30, 30.11.2026, 11/30/2026 or 20261130",
        "order 10012345",  # a bare 8-digit number is an id as often as a phone number
        "1f1ecc8f-b9a4-65db-bfff-4553988d10b6",  # a LangGraph checkpoint id (uuid6)
        "12345678-1234-5678-1234-567812345678",
        "00000000000000000000000000000002.0.2438596036592095",  # a channel version
        "ws-refund-4000056655665557",  # an idempotency key ending in digits (not Luhn-valid)
        "ab4000056655665556cd",  # a hex word, whatever digits it holds
        "01e057b5b4353d9d198c3b7e4a79fb95585e1534",
        "ping @ana.lopez",  # a mention, not a spaced-out email
        "look at this dot com bubble",
        "de00 3704 0044 0532 0130 00",  # wrong check digits
        "be12ab34cd56ef78",  # a hex id shaped like a Belgian IBAN
    ],
)
def test_the_agents_own_state_is_left_alone(text: str) -> None:
    assert found(text) == []


def test_a_long_input_is_scanned_to_its_end() -> None:
    letters, digits = "a" * 64_000, "4" * 64_000
    text = f"{letters} ana@example.com {digits} 4111 1111 1111 1111 {letters}@example.com"
    assert found(text) == [
        ("email", "ana@example.com"),
        ("card", "4111 1111 1111 1111"),
        ("email", "a" * 64 + "@example.com"),  # a local part is at most 64 characters
    ]
    many = "ana@example.com, " * 4_000
    assert len(found(many)) == 4_000


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89 3704 0044 0532 0130 00") and not iban_ok("DE00 3704 0044 0532 0130 00")


def test_replace_and_extension() -> None:
    custom = D.with_patterns([Pattern("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"))])
    text = "ssn 123-45-6789, mail a@b.co"
    assert custom.replace(text, lambda kind, value: f"[{kind}]") == "ssn [ssn], mail [email]"
