"""A Contact ID signal as the signaling interface receives it, and the rules that validate it."""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from alarmhub.contactid import EVENTS
from alarmhub.core import errors
from alarmhub.core.errors import SignalRefusal

QUALIFIERS = {"E": "new event", "R": "restore"}


class SignalFields(NamedTuple):
    """The five validated, normalised body fields of a signal. Named tuples, like
    :class:`Signal`: built for every request, and a frozen dataclass's ``__init__`` sets each
    field through ``object.__setattr__`` (several times the cost)."""

    dnis: str
    panel: str
    code: str
    area: str
    zone: str


class Signal(NamedTuple):
    """A signal to be stored: everything received, with where and when it came from."""

    source: str
    destination: str
    fields: SignalFields
    token_name: str
    received_us: int
    idempotency_key: str | None = None


def _alnum(value: str, most: int) -> bool:
    return 0 < len(value) <= most and value.isascii() and value.isalnum()


def _not_all_zeros(value: str) -> bool:
    return value.strip("0") != ""


def _digits(value: str, most: int) -> bool:
    return 0 < len(value) <= most and value.isascii() and value.isdigit()


def _absent(value: Any) -> bool:
    return value is None or value == ""


def _padded(value: Any, width: int) -> str | None:
    """Up to ``width`` digits left-padded with zeros (absent means all zeros); None if invalid."""
    if _absent(value):
        return "0" * width
    if isinstance(value, str) and _digits(value, width):
        return value.zfill(width)
    return None


def valid_dnis(value: object) -> bool:
    """A dnis is 1-5 ASCII letters or digits, not all zeros."""
    return isinstance(value, str) and _alnum(value, 5) and _not_all_zeros(value)


def validate(body: dict[str, Any]) -> SignalFields | SignalRefusal:
    """Validate a decoded JSON body; the first failing field, in contract order, is reported."""
    dnis = body.get("dnis")
    if _absent(dnis):
        return errors.DNIS_REQUIRED
    if not valid_dnis(dnis):
        return errors.DNIS_INVALID
    panel = body.get("panel")
    if _absent(panel):
        return errors.PANEL_REQUIRED
    if not (isinstance(panel, str) and _alnum(panel, 10) and _not_all_zeros(panel)):
        return errors.PANEL_INVALID
    code = body.get("code")
    if _absent(code):
        return errors.CODE_REQUIRED
    if not (isinstance(code, str) and len(code) == 4):
        return errors.CODE_INVALID
    code = code.upper()
    if code[0] not in QUALIFIERS or code[1:] not in EVENTS:
        return errors.CODE_INVALID
    area = _padded(body.get("area"), 2)
    if area is None:
        return errors.AREA_INVALID
    zone = _padded(body.get("zone_or_user"), 3)
    if zone is None:
        return errors.ZONE_INVALID
    assert isinstance(dnis, str)
    return SignalFields(dnis=dnis, panel=panel, code=code, area=area, zone=zone)


def digest(sig: Signal) -> str:
    """What a signal says, as 32 hex digits: its path and its fields after defaults and padding,
    not who sent it nor when. A retry under an Idempotency-Key must say the same as the first
    signal; anything else is another signal (IDEMPOTENCY-2)."""
    said = "\x1f".join((sig.source, sig.destination, *sig.fields))
    return hashlib.blake2b(said.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
