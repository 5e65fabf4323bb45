"""The Ademco 685 automation protocol (Honeywell MX8000, and receivers that emulate it) of
decisions section 11: frames from LF to CR read into :class:`~alarmhub.receivers.frames.Frame`,
and their answers. Pure: no I/O."""

from __future__ import annotations

import re

from alarmhub.contactid import contact_id_event
from alarmhub.receivers.frames import (
    ACK,
    FRAME_MAX,
    NAK,
    Frame,
    Kind,
    Options,
    Splitter,
    printable,
    unreadable,
)

LF = 0x0A
CR = 0x0D
ADDRESSES = ("C", "U")  # the zone or user letter before CCC

_HEADER = re.compile(r"(?P<receiver>[0-9])(?P<line>[0-9]) ")
_CONTACT_ID = re.compile(
    r"(?P<account>[0-9A-F]{4}) 18 (?P<q>.)(?P<code>...) (?P<area>..) (?P<address>.)(?P<zone>...)"
)
_LINK_TEST = "OKAY @ "
_FOUR_ONE = re.compile(r"[0-9A-F]{4} [0-9A-F]")


def splitter() -> Splitter:
    """A splitter for one Ademco 685 link's stream: a frame starts with LF and ends with CR."""
    return Splitter(end=CR, start=LF)


def read(raw: bytes, options: Options) -> Frame:
    """The frame ``raw`` (LF to CR) as read; never raises: what cannot be read is an unreadable
    frame with the reason. ``options`` change nothing here.

    - Contact ID ``[LF]RLsAAAAs18sQXYZsGGsFCCC[CR]``: receiver and line one digit each, F ``C``
      (zone) or ``U`` (user), e.g. ``[LF]11s1234s18sE130s01sC015[CR]``;
    - link test ``[LF]RLsOKAYs@s[CR]``;
    - anything else is unreadable: the 4x1 low speed form ``[LF]RLsAAAAsE[CR]`` too, whose one
      hexadecimal event digit means what each panel's programming makes it mean (no Contact ID
      event can be read from it).

    Bytes before an LF (line noise, a frame cut short) are a frame of their own, unreadable.
    """
    if not raw.endswith(b"\r"):
        if len(raw) >= FRAME_MAX:
            return unreadable(raw, f"longer than {FRAME_MAX} bytes: cut")
        return unreadable(raw, "no [CR] at the end")
    if not raw.startswith(b"\n"):
        return unreadable(raw, "no [LF] at the start")
    text = printable(raw[1:-1])
    if text is None:
        return unreadable(raw, "a byte that is not printable ASCII")
    header = _HEADER.match(text)
    if header is None:
        return unreadable(raw, f"header {text[:3]!r} is not receiver, line (a digit each), space")
    receiver, line = header["receiver"], header["line"]
    content = text[header.end() :]
    if content == _LINK_TEST:
        return Frame(Kind.LINK_TEST, receiver, line)
    match = _CONTACT_ID.fullmatch(content)
    if match is None:
        if _FOUR_ONE.fullmatch(content):
            return unreadable(raw, "4x1 low speed: no Contact ID event", receiver, line)
        return unreadable(raw, "not a Contact ID frame nor a link test", receiver, line)
    if match["address"] not in ADDRESSES:
        return unreadable(raw, f"{match['address']!r} is not C (zone) or U (user)", receiver, line)
    event = contact_id_event(match["q"], match["code"], match["area"], match["zone"])
    if isinstance(event, str):
        return unreadable(raw, event, receiver, line)
    return Frame(Kind.EVENT, receiver, line, account=match["account"], events=(event,))


def answer(frame: Frame, ack: bool) -> bytes:
    """ACK (0x06) or NAK (0x15)."""
    return ACK if ack else NAK
