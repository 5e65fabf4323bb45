"""The Sur-Gard automation protocol's frames (MLR2, System I-5; decisions sections 11 and 12):
one place for the frame layout, read by the Sur-Gard receivers (``receivers.surgard``) and built
for an automation output (:mod:`alarmhub.core.outputs`). No I/O.

A frame is the protocol digit, the receiver ``RR`` (2 digits), the line ``L`` (1 to 3 digits)
and its content, then DC4: the link test ``1RRL`` + 11 spaces + ``@`` + 4 spaces, a Contact ID
event ``5RRLs18AAAAQXYZGGCCC`` (``s58`` and 10 digits for a longer account)."""

from __future__ import annotations

import re

from alarmhub.contactid import contact_id_event

DC4 = 0x14
TERMINATOR = bytes([DC4])
LINK_TEST_SPACES = (11, 4)  # spaces before and after the "@" of the link test the receivers send
ACCOUNT_FORMS = {"18": 4, "58": 10}  # message type -> digits of the account
_ACCOUNT = re.compile(r"[0-9A-F]+")


def _header(receiver: int, line: int, line_digits: int) -> str:
    if not 0 <= receiver <= 99:
        raise ValueError(f"receiver {receiver} is not 0-99")
    if not (line_digits >= 1 and 0 <= line < 10**line_digits):
        raise ValueError(f"line {line} does not fit {line_digits} digits")
    return f"{receiver:02d}{line:0{line_digits}d}"


def contact_id_frame(
    receiver: int,
    line: int,
    account: str,
    code: str,
    area: str,
    zone: str,
    line_digits: int = 1,
) -> bytes:
    """A Contact ID frame as a Sur-Gard receiver sends it: ``5RRLs18AAAAQXYZGGCCC[DC4]``; an
    account of 5 to 10 characters in the 10-digit form (``s58``). Raises ValueError when a
    field cannot be sent."""
    header = _header(receiver, line, line_digits)
    if not (0 < len(account) <= max(ACCOUNT_FORMS.values())) or not _ACCOUNT.fullmatch(account):
        raise ValueError(f"account {account!r} is not 1-10 digits (0-9, A-F)")
    kind = "18" if len(account) <= ACCOUNT_FORMS["18"] else "58"
    event = contact_id_event(code[:1], code[1:], area, zone)
    if isinstance(event, str) or len(code) != 4:
        raise ValueError(f"event {code} {area} {zone}: {event}")
    padded = account.zfill(ACCOUNT_FORMS[kind])
    return f"5{header} {kind}{padded}{code}{area}{zone}".encode("ascii") + TERMINATOR


def link_test_frame(receiver: int, line: int, line_digits: int = 1) -> bytes:
    """The link test (heartbeat) a Sur-Gard receiver sends: ``1RRL`` + 11 spaces + ``@`` + 4
    spaces + DC4."""
    before, after = LINK_TEST_SPACES
    text = f"1{_header(receiver, line, line_digits)}{' ' * before}@{' ' * after}"
    return text.encode("ascii") + TERMINATOR
