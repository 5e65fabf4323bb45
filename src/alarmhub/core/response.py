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
from typing import Any

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


def call_list_rank(name: str) -> tuple[bool, str]:
    """Where a call list comes among an account's: PRIMARY first, then the others by name."""
    return (name != DEFAULT_CALL_LIST, name)


def calling_order(places: Iterable[tuple[str, int]]) -> tuple[Any, ...]:
    """A contact's place in calling order, as a station reads an account's contacts, from its
    places (call list, order): those of PRIMARY by their order first, then those of the other
    lists (by name) who are not on an earlier one, each list by order; contacts on no list
    last."""
    first = min(((call_list_rank(name), order) for name, order in places), default=None)
    return (1,) if first is None else (0, first)


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


def outcome_words(outcome: CallOutcome) -> str:
    """How history writes a call's outcome: ``NO ANSWER``."""
    return outcome.value.replace("-", " ").upper()


def call_detail(contact: str | None, phone: str, outcome: CallOutcome, text: str = "") -> str:
    """What the history record of a call says: whom, which number, how it ended, the note."""
    who = f"{contact.upper()} " if contact else ""
    detail = f"{who}{phone} {outcome_words(outcome)}"
    return f"{detail}: {text}" if text else detail


NOT_VERIFIED = "NOT VERIFIED"
"""The operator record of a wrong code: what the attempt limit counts."""
PASSCODE_FAILURES_MAX = 5
PASSCODE_LOCK_MINUTES = 15
"""An alarm that had ``PASSCODE_FAILURES_MAX`` wrong codes in the last
``PASSCODE_LOCK_MINUTES`` takes no more checks until the oldest of them is that old; an
operator's wrong codes (on any alarms) earn the waits of the sign-in throttle
(``core.sign_in``): five free, then 30 s doubling up to 15 minutes."""


def passcode_locked(failures: int) -> bool:
    """Whether an alarm with ``failures`` wrong codes in the window takes no more checks."""
    return failures >= PASSCODE_FAILURES_MAX


@dataclass(frozen=True, slots=True)
class PasscodeAnswer:
    """What a passcode check answers. The duress code is ``verified`` too, so that whoever
    gave it cannot tell from the answer."""

    verified: bool
    duress: bool

    @property
    def record(self) -> str:
        """What the operator record of the check says (never the code that was given)."""
        if self.duress:
            return "VERIFIED (DURESS CODE GIVEN)"
        return "VERIFIED" if self.verified else NOT_VERIFIED


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


# what data entry keeps ----------------------------------------------------------------------

DESCRIPTION_MAX = 40
EQUIPMENT_MAX = 30
NAME_MAX = 60
PHONE_MAX = 20
EMAIL_MAX = 120
RELATION_MAX = 30
NOTES_MAX = 500
PERMIT_MAX = 40
AGENCY_CODE_MAX = 16
PASSCODE_MIN = 3
PASSCODE_MAX = 32
_PHONE_CHARS = frozenset("0123456789+-() .x#*")


class AgencyKind(StrEnum):
    """The dispatch points an account has: one of each kind."""

    POLICE = "police"
    FIRE = "fire"
    MEDICAL = "medical"


@dataclass(frozen=True, slots=True)
class Zone:
    """What a zone of an account's panel is: ``area`` is ``ANY_AREA`` for every area."""

    account_number: str
    zone: str
    description: str
    area: str = ANY_AREA
    equipment: str = ""


@dataclass(frozen=True, slots=True)
class PanelUser:
    """A user of an account's panel, by the number the panel reports."""

    account_number: str
    user: str
    name: str


@dataclass(frozen=True, slots=True)
class Phone:
    number: str
    kind: PhoneKind = PhoneKind.MOBILE


@dataclass(frozen=True, slots=True)
class Contact:
    """Someone to call for an account. The passcode is never here: only its hash is kept."""

    account_number: str
    name: str
    phones: tuple[Phone, ...] = ()
    email: str = ""
    relation: str = ""
    notes: str = ""
    notify: tuple[str, ...] = ()  # the kinds of notification it subscribes to (decisions §13)
    notify_by: tuple[str, ...] = ()  # by which channels: email, sms


@dataclass(frozen=True, slots=True)
class Agency:
    """A police, fire or medical dispatch point, kept station-wide under a short code."""

    code: str
    kind: AgencyKind
    name: str
    phone: str = ""


def _text_problem(what: str, value: str, most: int, required: bool = False) -> str | None:
    if required and not value.strip():
        return f"{what} must not be empty"
    if len(value) > most:
        return f"{what} must be at most {most} characters"
    if value and not value.isprintable():
        return f"{what} must be printable text"
    return None


def area_problem(area: str) -> str | None:
    """Why ``area`` cannot be an area of a zone description, or None: 1-2 digits or empty."""
    if area and (len(area) > 2 or not area.isascii() or not area.isdigit()):
        return "area must be a number from 00 to 99 (or empty: every area)"
    return None


def two_digits(area: str) -> str:
    """An area as Contact ID writes it (``1`` is ``01``); empty stays empty (every area)."""
    return area.zfill(2) if area else ANY_AREA


def zone_problem(zone: Zone) -> str | None:
    """Why ``zone`` cannot be kept, or None when it can."""
    return (
        number_problem(zone.zone, "zone")
        or area_problem(zone.area)
        or _text_problem("description", zone.description, DESCRIPTION_MAX, required=True)
        or _text_problem("equipment", zone.equipment, EQUIPMENT_MAX)
    )


def user_problem(user: PanelUser) -> str | None:
    """Why ``user`` cannot be kept, or None when it can."""
    return number_problem(user.user, "user") or _text_problem("name", user.name, NAME_MAX, True)


def phone_problem(number: str) -> str | None:
    """Why ``number`` cannot be a phone number, or None: digits and the usual punctuation."""
    if not number.strip() or len(number) > PHONE_MAX:
        return f"a phone number is 1-{PHONE_MAX} characters"
    if not set(number) <= _PHONE_CHARS or not any(c.isdigit() for c in number):
        return f"phone number {number!r} may hold only digits, spaces and + - ( ) . x # *"
    return None


def phone_kind(value: str) -> PhoneKind:
    """The kind a text names (empty: mobile); ValueError names the kinds."""
    try:
        return PhoneKind(value.strip().lower() or PhoneKind.MOBILE)
    except ValueError:
        kinds = ", ".join(k.value for k in PhoneKind)
        raise ValueError(f"phone kind {value!r} is not one of {kinds}") from None


def contact_problem(contact: Contact) -> str | None:
    """Why ``contact`` cannot be kept, or None when it can."""
    problem = _text_problem("name", contact.name, NAME_MAX, required=True)
    if problem:
        return problem
    if len(contact.phones) > MAX_PHONES:
        return f"a contact has at most {MAX_PHONES} phone numbers"
    for phone in contact.phones:
        problem = phone_problem(phone.number)
        if problem:
            return problem
    from alarmhub.core import notifications  # it imports the alarm types, which import this

    has_mobile = any(p.kind is PhoneKind.MOBILE for p in contact.phones)
    problem = notifications.subscription_problem(
        contact.notify, contact.notify_by, contact.email.strip(), has_mobile
    )
    if problem:
        return problem
    return (
        _text_problem("email", contact.email, EMAIL_MAX)
        or _text_problem("relation", contact.relation, RELATION_MAX)
        or _text_problem("notes", contact.notes, NOTES_MAX)
    )


def agency_problem(agency: Agency) -> str | None:
    """Why ``agency`` cannot be kept, or None when it can."""
    code = agency.code
    if (
        not code
        or len(code) > AGENCY_CODE_MAX
        or not code.isascii()
        or not all(c.isalnum() or c in "-_" for c in code)
    ):
        return f"an agency code is 1-{AGENCY_CODE_MAX} letters, digits, '-' or '_'"
    problem = _text_problem("name", agency.name, NAME_MAX, required=True)
    if problem:
        return problem
    return phone_problem(agency.phone) if agency.phone else None


def permit_problem(permit: str) -> str | None:
    return _text_problem("permit", permit, PERMIT_MAX)


def assignment_problem(kind: str, code: str, found: str | None) -> str | None:
    """Why agency ``code``, of kind ``found`` (None: there is no such agency), cannot be an
    account's ``kind`` agency, or None when it can."""
    if found is None:
        return f"no agency {code!r} (add it with 'agency add')"
    if found != kind:
        return f"agency {code!r} is {found}, not {kind}"
    return None


def passcode_problem(passcode: str) -> str | None:
    """Why ``passcode`` cannot be a passcode, or None: 3-32 printable characters."""
    if not PASSCODE_MIN <= len(passcode) <= PASSCODE_MAX or not passcode.isprintable():
        return f"a passcode is {PASSCODE_MIN}-{PASSCODE_MAX} printable characters"
    return None


def next_to_call(call_list: Iterable[int], tried: Iterable[int]) -> int | None:
    """The first contact of a call list (contact ids in order) not tried yet for the alarm."""
    done = set(tried)
    return next((contact for contact in call_list if contact not in done), None)
