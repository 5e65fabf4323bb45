"""The fields of one Contact ID event as frames carry them: the qualifier (digit on the wire,
letter in alarmhub), the DC-05 event code, the area and the zone. No I/O."""

from __future__ import annotations

import re

from alarmhub.contactid.table import EVENTS

QUALIFIERS = {"1": "E", "3": "R", "6": "P"}
"""Contact ID's qualifier digits and their letters: 1 new event, 3 restore, 6 status report."""
LETTERS = tuple(QUALIFIERS.values())
"""Contact ID's qualifiers as letters (E new event, R restore, P status), as events carry them."""
_AREA = re.compile(r"[0-9]{2}")
_ZONE = re.compile(r"[0-9]{3}")


def contact_id_event(qualifier: str, code: str, area: str, zone: str) -> tuple[str, str, str] | str:
    """One Contact ID event as a frame's events hold it (``("E130", "01", "015")``), or why it
    is not one: qualifier E/R/P, a DC-05 event code, area 2 digits, zone 3 digits."""
    if qualifier not in LETTERS:
        return f"qualifier {qualifier!r} is not one of {', '.join(LETTERS)}"
    if code not in EVENTS:
        return f"Contact ID event {code!r} is not in DC-05"
    if _AREA.fullmatch(area) is None:
        return f"area {area!r} is not 2 digits"
    if _ZONE.fullmatch(zone) is None:
        return f"zone {zone!r} is not 3 digits"
    return qualifier + code, area, zone
