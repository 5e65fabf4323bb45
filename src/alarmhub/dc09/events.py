"""The events a DC-09 data block carries, as Contact ID codes: ADM-CID directly, SIA-DCS through
the code table ``sia_codes.tsv``. No I/O.

ADM-CID: ``#ACCT|QEEE GG ZZZ`` (qualifier 1 new event, 3 restore, 6 status report).
SIA-DCS: ``#ACCT|N`` then modifiers (``ri`` area, ``id`` user, ``ti`` time, ...) and events (two
letters and an address), ``/`` between them; further blocks after ``|`` (``A`` text) are skipped.
"""

from __future__ import annotations

import csv
import re
from importlib import resources
from typing import NamedTuple

from alarmhub.contactid import EVENTS, QUALIFIERS
from alarmhub.dc09.frame import new

AREA_MAX = 99
ZONE_MAX = 999

_ADM_CID = re.compile(r"([136])(\d{3}) ?(\d{2}) ?(\d{3})")
# the usual ADM-CID block in one match: _ACCOUNT, then _ADM_CID
_ADM_CID_BLOCK = re.compile(r"(?:#([0-9A-Za-z]{1,16}))?\|([136])(\d{3}) ?(\d{2}) ?(\d{3})")
_ACCOUNT = re.compile(r"(?:#([0-9A-Za-z]{1,16}))?\|")
_SIA_TOKEN = re.compile(r"/?(?:([a-z]{2})([0-9:\-]*)|([A-Z]{2})(\d*)(?:\^[^\^]*\^)?)")


class Event(NamedTuple):
    """One event as Contact ID: ``code`` (qualifier letter and three digits), area, zone."""

    code: str
    area: str = "00"
    zone: str = "000"


class Events(NamedTuple):
    """What a data block says: the account it names (None when it names none), its events
    (none: the block is empty, a link test) and the SIA codes the table does not know."""

    account: str | None
    events: tuple[Event, ...]
    unknown: tuple[str, ...] = ()


def _load_sia_codes() -> dict[str, str]:
    text = resources.files("alarmhub.dc09").joinpath("sia_codes.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    table = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        code = row["contact_id"]
        if code[0] not in "ER" or code[1:] not in EVENTS:
            raise ValueError(f"sia_codes.tsv: {row['sia']} maps to {code}, not a DC-05 event")
        table[row["sia"]] = code
    return table


SIA_CODES: dict[str, str] = _load_sia_codes()


def _clamped(digits: str, most: int, width: int) -> str:
    """A number in Contact ID's width; larger numbers become the largest (they cannot be sent
    in Contact ID, and the alarm must still reach an operator)."""
    return str(min(int(digits or "0"), most)).zfill(width)


def _account(data: str) -> tuple[str | None, str]:
    match = _ACCOUNT.match(data)
    if match is None:
        return None, data
    account = match.group(1)
    return (account.upper() if account else None), data[match.end() :]


def adm_cid(data: str) -> Events | str:
    """The event of an ADM-CID data block, or why there is none."""
    match = _ADM_CID_BLOCK.fullmatch(data)
    if match is not None and match[3] in EVENTS:
        account, qualifier, code, area, zone = match.groups()
        event = new(Event, (QUALIFIERS[qualifier] + code, area, zone))
        return new(Events, (account.upper() if account else None, (event,), ()))
    account, rest = _account(data)
    if not rest:
        return Events(account, ())
    match = _ADM_CID.fullmatch(rest)
    if match is None:
        return "not a Contact ID event"
    qualifier, code, area, zone = match.groups()
    if code not in EVENTS:
        return f"Contact ID event {code} is not in DC-05"
    return Events(account, (Event(QUALIFIERS[qualifier] + code, area, zone),))


def sia_dcs(data: str) -> Events | str:
    """The events of a SIA-DCS data block (those of codes in the table), or why there are
    none. Unknown codes beside known ones are left out (and named in ``unknown``)."""
    account, rest = _account(data)
    if not rest:
        return Events(account, ())
    events: list[Event] = []
    unknown: list[str] = []
    for block in rest.split("|"):
        if not block or block[0] == "A":  # an empty block, or ASCII text
            continue
        body = block[1:] if block[0] in "NO" else block
        area = "00"
        position = 0
        while position < len(body):
            match = _SIA_TOKEN.match(body, position)
            if match is None or match.end() == position:
                return f"SIA event block {block!r} is malformed"
            position = match.end()
            modifier, value, code, address = match.groups()
            if modifier == "ri":
                if not value.isdigit():
                    return f"SIA area {value!r} is not a number"
                area = _clamped(value, AREA_MAX, 2)
            elif code is not None:
                mapped = SIA_CODES.get(code)
                if mapped is None:
                    unknown.append(code)
                    continue
                events.append(Event(mapped, area, _clamped(address, ZONE_MAX, 3)))
    if not events:
        return f"no known SIA event (unknown: {', '.join(unknown)})" if unknown else "no event"
    return Events(account, tuple(events), tuple(unknown))
