"""``alarmhub.core.line_mask`` (decisions §4: a dnis's mask and a panel give the account) and
``alarmhub.core.account`` (what an account may hold)."""

from __future__ import annotations

import pytest

from alarmhub.core.account import Account, account_number_problem, account_problem
from alarmhub.core.line_mask import ACCOUNT_MAX, apply_mask, mask_problem


@pytest.mark.parametrize(
    ("mask", "panel", "account"),
    [
        ("70####", "12", "700012"),  # decisions §4 example
        ("C-", "A1B2", "C-A1B2"),  # decisions §4 example: a prefix
        ("70####", "1234", "701234"),  # the panel fills the run exactly
        ("####", "7", "0007"),
        ("7##X", "5", "705X"),  # text after the run is kept
        ("#########", "1", "000000001"),  # nine positions: the longest account
        ("AB", "1234567", "AB1234567"),  # a prefix reaching exactly nine characters
    ],
)
def test_apply_mask(mask: str, panel: str, account: str) -> None:
    assert mask_problem(mask) is None
    assert apply_mask(mask, panel) == account


@pytest.mark.parametrize(
    ("mask", "panel"),
    [
        ("70####", "12345"),  # the panel is longer than the run of #
        ("##", "123"),
        ("C-", "A1B2C3D4"),  # a prefix: the result would be 10 characters
        ("ABCDEFGHI", "1"),  # a nine-character prefix leaves no room
    ],
)
def test_apply_mask_refuses_what_does_not_fit(mask: str, panel: str) -> None:
    assert apply_mask(mask, panel) is None


def test_result_is_never_longer_than_an_account() -> None:
    for mask in ("7#", "12345678#", "ABCDEF", "#"):
        for panel in ("1", "12", "1234", "A1B2C3D4E5"):
            account = apply_mask(mask, panel)
            assert account is None or len(account) <= ACCOUNT_MAX


@pytest.mark.parametrize("mask", ["70####", "C-", "#", "#########", "A#", "#B", "7##X"])
def test_good_masks(mask: str) -> None:
    assert mask_problem(mask) is None


@pytest.mark.parametrize(
    ("mask", "why"),
    [
        ("", "empty"),
        ("1234567890", "at most 9"),
        ("##########", "at most 9"),
        ("7#0#", "one run"),
        ("#-#", "one run"),
        ("70 ##", "without spaces"),
        (" 70##", "without spaces"),
        ("70\t##", "printable"),
        ("7é##", "ASCII"),
    ],
)
def test_bad_masks(mask: str, why: str) -> None:
    problem = mask_problem(mask)
    assert problem is not None
    assert why in problem


# accounts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "account",
    [
        Account("700012", "Acme Ltd"),
        Account("C-A1B2", "J. Smith", "1 Main St", "Springfield", "IL"),
        Account("X" * ACCOUNT_MAX, "n"),
        Account("D1", "N" * 100, "S" * 100, "C" * 60, "T" * 30),
        Account("D2", "Müller GmbH", city="Zürich"),  # names may be any printable text
    ],
)
def test_good_accounts(account: Account) -> None:
    assert account_problem(account) is None


@pytest.mark.parametrize(
    ("account", "why"),
    [
        (Account("", "Acme"), "must not be empty"),
        (Account("1234567890", "Acme"), "at most 9"),
        (Account("12 34", "Acme"), "without spaces"),
        (Account("12é4", "Acme"), "ASCII"),
        (Account("12\t4", "Acme"), "printable"),
        (Account("1234", ""), "name must not be empty"),
        (Account("1234", "   "), "name must not be empty"),
        (Account("1234", "N" * 101), "name must be at most 100"),
        (Account("1234", "Acme", street="S" * 101), "street must be at most 100"),
        (Account("1234", "Acme", city="C" * 61), "city must be at most 60"),
        (Account("1234", "Acme", state="T" * 31), "state must be at most 30"),
        (Account("1234", "Acme\nLtd"), "name must be printable"),
        (Account("1234", "Acme", city="Spring\x00field"), "city must be printable"),
    ],
)
def test_bad_accounts(account: Account, why: str) -> None:
    problem = account_problem(account)
    assert problem is not None
    assert why in problem


def test_account_number_problem_matches_account_problem() -> None:
    assert account_number_problem("700012") is None
    assert account_number_problem("") is not None
    assert account_number_problem("1234567890") is not None
