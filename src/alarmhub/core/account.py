"""Subscriber accounts: what an account number and its data may hold."""

from __future__ import annotations

from dataclasses import dataclass

from alarmhub.core.line_mask import ACCOUNT_MAX

FIELD_LIMITS = {"company_name": 100, "street": 100, "city": 60, "state": 30}


@dataclass(frozen=True, slots=True)
class Account:
    """A subscriber account as data entry keeps it."""

    account_number: str
    company_name: str
    street: str = ""
    city: str = ""
    state: str = ""


def account_number_problem(number: str) -> str | None:
    """Why ``number`` cannot be an account number, or None when it can."""
    if not number:
        return "account number must not be empty"
    if len(number) > ACCOUNT_MAX:
        return f"account number must be at most {ACCOUNT_MAX} characters"
    if not number.isascii() or not number.isprintable() or " " in number:
        return "account number must be printable ASCII without spaces"
    return None


def account_problem(account: Account) -> str | None:
    """Why ``account`` cannot be stored, or None when it can."""
    problem = account_number_problem(account.account_number)
    if problem:
        return problem
    if not account.company_name.strip():
        return "name must not be empty"
    for name, most in FIELD_LIMITS.items():
        value = getattr(account, name)
        if len(value) > most:
            return f"{name.replace('company_', '')} must be at most {most} characters"
        if not value.isprintable():
            return f"{name.replace('company_', '')} must be printable text"
    return None
