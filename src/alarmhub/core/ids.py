"""Database ids (alarms, contacts, webhooks, deliveries): positive whole numbers that fit the
database's signed 64-bit integers. Anything else names no row: the API answers it as a row that
does not exist and the command line refuses it, before any query (a larger number fails to bind
on both databases)."""

from __future__ import annotations

MAX_ID = 2**63 - 1
MAX_DIGITS = len(str(MAX_ID))


def is_id(value: object) -> bool:
    """Whether ``value`` can be a row's id: an int (not a bool) in 1..2**63-1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


def parse_id(text: str) -> int | None:
    """The id written in ``text`` (ASCII digits), or None when it can be no row's id."""
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
        return None
    value = int(text)
    return value if is_id(value) else None
