"""The Bosch D6600's "D6500 mode" automation output (the D6500's own format): frames ending
with DC4 read into :class:`~alarmhub.receivers.frames.Frame`, and their answers. Pure: no I/O."""

from __future__ import annotations

import re
import string

from alarmhub.contactid import QUALIFIERS, contact_id_event
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

DC4 = 0x14
TERMINATOR = bytes([DC4])
SIZE = 20  # a frame's bytes without its header character and terminator
LINES = {
    letter: str(number)
    for number, letter in enumerate(string.digits + string.ascii_uppercase[: ord("Y") - 64])
}  # "0".."9" are lines 0-9, "A".."W" lines 10-32, "X" group 33, "Y" groups 34 and above
CONTACT_ID = "a"
LINK_TEST = "1"

_HEADER = re.compile(r"(?P<type>.)(?P<receiver>[0-9]{2})(?P<line>.)")
_CONTACT_ID = re.compile(
    r" (?P<account>[0-9A-F]{4})18(?P<q>.)(?P<code>...)(?P<area>..)(?P<zone>...)"
)
_LINK_TEST = " " * 11 + "@" + " " * 4


def splitter() -> Splitter:
    """A splitter for one D6500-mode link's stream: a frame ends with DC4."""
    return Splitter(end=DC4)


def read(raw: bytes, options: Options) -> Frame:
    """The frame ``raw`` (with its terminator) as read; never raises: what cannot be read is
    an unreadable frame with the reason. ``options`` change nothing here.

    From the Conettix D6600/D6100 Computer Interface Manual (4998122703-01 and -05), section 3.1
    "D6500 Mode Messages", byte by byte (``h`` an optional header character, ``t`` the trailer,
    "typically HEX 14", ``s`` a space):

    - 3.1.4 Ademco Contact-ID, message type ``a``: ``h a r r l s a a a a 1 8 Q X Y Z G G C C C t``
      (Q 1 new event or opening, 3 restore or closing, 6 previous event: read as E, R, P);
    - 3.1.15 Link Test, message type ``1``: ``h 1 r r 0`` + 11 spaces + ``@`` + 4 spaces + ``t``;
    - Table 2: the line or group is one character: 1-9, then lines 10-32 as ``A``-``W``, group 33
      as ``X`` and groups of 34 and above as ``Y`` (read as line 34); line 0 is the receiver's own.

    The header character's value is the receiver's setting, so a frame of 22 bytes has one (any
    byte) and a frame of 21 bytes has none. The manual's other message types (Acron, 4-2, 4-8-1,
    BFSK, DNIS, ...) and the 10-digit Contact ID form are unreadable.
    """
    if not raw.endswith(TERMINATOR):
        if len(raw) >= FRAME_MAX:
            return unreadable(raw, f"longer than {FRAME_MAX} bytes: cut")
        return unreadable(raw, "no [DC4] at the end")
    body = raw[:-1]
    if len(body) == SIZE + 1:
        body = body[1:]  # the header character
    text = printable(body)
    if text is None:
        return unreadable(raw, "a byte that is not printable ASCII")
    header = _HEADER.match(text)
    if header is None or header["line"] not in LINES:
        return unreadable(raw, f"header {text[:4]!r} is not type, receiver (2), line")
    kind, receiver, line = header["type"], header["receiver"], LINES[header["line"]]
    content = text[header.end() :]
    if len(body) != SIZE:
        return unreadable(raw, f"{len(raw)} bytes, not 21 or 22", receiver, line)
    if kind == LINK_TEST:
        if content != _LINK_TEST:
            return unreadable(raw, "message type 1 but not a link test", receiver, line)
        return Frame(Kind.LINK_TEST, receiver, line)
    if kind != CONTACT_ID:
        return unreadable(raw, f"message type {kind!r} is not read", receiver, line)
    match = _CONTACT_ID.fullmatch(content)
    if match is None:
        return unreadable(raw, "not a Contact ID frame (s AAAA 18 QXYZGGCCC)", receiver, line)
    qualifier = QUALIFIERS.get(match["q"])
    if qualifier is None:
        return unreadable(raw, f"qualifier {match['q']!r} is not 1, 3 or 6", receiver, line)
    event = contact_id_event(qualifier, match["code"], match["area"], match["zone"])
    if isinstance(event, str):
        return unreadable(raw, event, receiver, line)
    return Frame(Kind.EVENT, receiver, line, account=match["account"], events=(event,))


def answer(frame: Frame, ack: bool) -> bytes:
    """ACK (0x06) or NAK (0x15)."""
    return ACK if ack else NAK
