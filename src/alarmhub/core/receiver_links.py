"""Facts of the receiver links that the router shares with them: the destination their signals
arrive under, the name they are stored under, and how a link's receiver line is named."""

from __future__ import annotations

from alarmhub.core.dc09 import line_name

DESTINATION = "receiver"
TOKEN_NAME = "(receiver)"  # noqa: S105 (a name, not a secret) no token can have this name
SOURCE_MAX = 64  # a signal's source: a link's name (32) and its receiver line fit


def source(link: str, receiver: str, line: str) -> str:
    """The ``source`` of a link's signal: the link and its receiver line, ``NAME R1L1``
    (numbers as numbers: ``01`` is 1; ``R0L0`` when the frame names none)."""
    return f"{link} {line_name(_number(receiver), _number(line))}"[:SOURCE_MAX]


def _number(digits: str) -> int | str:
    return int(digits) if digits.isascii() and digits.isdigit() else digits or 0
