"""An account's response data as the rules see it (decisions section 7): zone and panel-user
numbers, what a zone's description or a user's name adds to a signal's HIST_TEXT, the call list an
alarm type uses, the outcomes of a call, and what a passcode check answers.

A zone description entered without an area applies to that zone in every area; one entered for an
area wins there. HIST_TEXT gains the description when the event's second field is a zone
(SECOND_ZONE_IS ``Z``) and the user's name when it is a user (``U``): the text it would have had,
a space, and the description as entered. A passcode check never tells the caller that the duress
code was given: it answers verified, and the station raises a DURESS alarm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

NUMBER_DIGITS = 3  # zones and panel users: 000-999
DEFAULT_CALL_LIST = "PRIMARY"
CALL_LIST_MAX = 16
MAX_PHONES = 3
ANY_AREA = ""  # the area of a zone description that applies in every area


class PhoneKind(StrEnum):
    MOBILE = "mobile"
    HOME = "home"
    WORK = "work"


class CallOutcome(StrEnum):
    """How a call an operator made ended."""

    ANSWERED = "answered"
    NO_ANSWER = "no-answer"
    BUSY = "busy"
    LEFT_MESSAGE = "left-message"
    WRONG_NUMBER = "wrong-number"


def number_problem(value: str, what: str = "zone") -> str | None:
    """Why ``value`` cannot be a zone (or panel user) number, or None when it can: 1-3 digits."""
    if not value or len(value) > NUMBER_DIGITS or not value.isascii() or not value.isdigit():
        return f"{what} must be a number from 000 to 999"
    return None


def three_digits(value: str) -> str:
    """A valid zone or user number as Contact ID writes it: ``15`` is ``015``."""
    return value.zfill(NUMBER_DIGITS)


def call_list_name(name: str) -> str:
    """A call list's name as it is kept: upper case, no surrounding blanks."""
    return name.strip().upper()


def call_list_problem(name: str) -> str | None:
    """Why ``name`` cannot name a call list, or None: 1-16 letters, digits, ``-`` or ``_``."""
    if (
        not name
        or len(name) > CALL_LIST_MAX
        or not name.isascii()
        or not all(c.isalnum() or c in "-_" for c in name)
    ):
        return f"a call list name is 1-{CALL_LIST_MAX} letters, digits, '-' or '_'"
    return None


def zone_description(
    descriptions: Mapping[tuple[str, str], str], zone: str, area: str
) -> str | None:
    """The description of ``zone`` in ``area``: the area's own, else the one for every area."""
    return descriptions.get((zone, area)) or descriptions.get((zone, ANY_AREA))


def described(
    text: str,
    second_zone_is: str,
    zone: str,
    area: str,
    zones: Mapping[tuple[str, str], str],
    users: Mapping[str, str],
) -> str:
    """``text`` with what the account's data says of the signal's second field: the zone's
    description (``Z``) or the panel user's name (``U``); ``text`` itself when there is none."""
    if second_zone_is == "Z":
        extra = zone_description(zones, zone, area)
    elif second_zone_is == "U":
        extra = users.get(zone)
    else:
        extra = None
    return f"{text} {extra}" if extra else text


def contact_list(type_list: str | None, list_sizes: Mapping[str, int]) -> str | None:
    """XMAPEND's CONTACT_LIST: the call list the alarm's type uses (``PRIMARY`` unless the
    station set another) when the account has a non-empty list of that name, else None."""
    name = type_list or DEFAULT_CALL_LIST
    return name if list_sizes.get(name, 0) > 0 else None


@dataclass(frozen=True, slots=True)
class PasscodeAnswer:
    """What a passcode check answers. The duress code is ``verified`` too, so that whoever
    gave it cannot tell from the answer."""

    verified: bool
    duress: bool


def check_passcode(
    given: str,
    passcode_hashes: Iterable[str],
    duress_hash: str | None,
    matches: Callable[[str, str], bool],
) -> PasscodeAnswer:
    """Check ``given`` against the account's duress code and its contacts' passcodes, each
    kept only as a hash that ``matches(hash, given)`` verifies."""
    if not given:
        return PasscodeAnswer(verified=False, duress=False)
    if duress_hash is not None and matches(duress_hash, given):
        return PasscodeAnswer(verified=True, duress=True)
    verified = any(matches(hashed, given) for hashed in passcode_hashes)
    return PasscodeAnswer(verified=verified, duress=False)
