"""The Sur-Gard automation protocol (MLR2, System I-5) of decisions section 11: frames ending
with DC4 read into :class:`~alarmhub.receivers.frames.Frame` and their answers; the frame layout
and the frames an automation output sends are :mod:`alarmhub.core.surgard`'s. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import replace

from alarmhub.contactid import contact_id_event
from alarmhub.core.surgard import ACCOUNT_FORMS, DC4, TERMINATOR
from alarmhub.dc09.events import sia_dcs
from alarmhub.dc09.receiver import PANEL_MAX
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

B32 = b"\x00\x00"  # a B32 header's first two bytes
B32_SIZE = 4
B32_ANSWER = b"\x00\x00\x00\x05"  # the header of an answer: 5 bytes in all

_RECEIVER = re.compile(r"[0-9]{2}")
_LINK_TEST = re.compile(r" +@ *")
_CONTACT_ID = re.compile(
    r" (?P<type>18|58)(?P<account>[0-9A-F]+)(?P<q>.)(?P<code>...)(?P<area>..)(?P<zone>...)"
)
_BRACKETED = re.compile(r"\[(?P<content>[^\[\]]*)\]")
_ACCOUNT = re.compile(r"#(?P<account>[0-9A-Za-z]{1,16})\|")
_HEADER_BYTES = 4  # B32 bytes at a frame's start that are never its terminator


class SurgardSplitter(Splitter):
    """Frames end with DC4; the length of a B32 header (which may hold the byte 0x14, as BCD
    "14") is never taken for a terminator."""

    def __init__(self) -> None:
        super().__init__(end=DC4)

    def _find_end(self, data: bytes, position: int) -> int:
        held = len(self.buffer)
        if held < _HEADER_BYTES:
            head = (bytes(self.buffer) + data[position : position + B32_SIZE])[: len(B32)]
            if B32.startswith(head):  # a B32 header, or could still be one
                position += B32_SIZE - held
        return data.find(DC4, position)


def splitter() -> Splitter:
    """A splitter for one Sur-Gard link's stream."""
    return SurgardSplitter()


def _wrong_header(raw: bytes) -> str | None:
    """Why the B32 header of ``raw`` is wrong, or None when its length is ``raw``'s."""
    length = raw[len(B32) : B32_SIZE].hex()
    if len(length) != 2 * (B32_SIZE - len(B32)) or not length.isdigit():
        return f"B32 header length {length!r} is not BCD"
    if int(length) != len(raw):
        return f"B32 header length {int(length)} is not the frame's {len(raw)} bytes"
    return None


def read(raw: bytes, options: Options) -> Frame:
    """The frame ``raw`` (with its terminator) as read; never raises: what cannot be read is
    an unreadable frame with the reason.

    A frame is the protocol digit, the receiver (2 digits), the line (``options.line_digits``
    digits) and its content, then DC4:

    - ``1`` link test: ``1RRL`` spaces ``@`` spaces (``1011sssssssssss@ssss``);
    - ``5`` Contact ID: ``5RRLs18AAAAQXYZGGCCC``, or with a 10-digit account
      ``5RRLs58AAAAAAAAAAQXYZGGCCC``. The System manuals print that form's first character as
      ``Q``, but its protocol digit is the ``5`` of every Contact ID frame: what marks the
      10-digit account is ``58`` in place of ``18`` (Contact ID's format number for a 10-digit
      account, as the Bosch D6600 manual names it too);
    - ``S`` SIA: ``SRRL[#AAAA|N...]``, read as the DC-09 receiver reads SIA-DCS;
    - ``0`` the receiver's own event: ``0RRL[#AAAA|N...]``;
    - anything else (basic 4x2, BFSK, ...) is unreadable.

    Over TCP a frame may come in a "B32" header ``00 00 LL LL``: the size of the whole packet
    in BCD, header included (SG Automation Output Protocol, 1.4 "B32 Headers": 27 bytes come
    as ``00 00 00 31``; the ACK is ``00 00 00 05 06``). Every message both ways carries it
    once enabled, so the NAK is ``00 00 00 05 15``.
    """
    wrapped = raw.startswith(B32)
    frame = _read(raw, options)
    return replace(frame, wrapped=True) if wrapped else frame


def _read(raw: bytes, options: Options) -> Frame:
    if not raw.endswith(TERMINATOR):
        if len(raw) >= FRAME_MAX:
            return unreadable(raw, f"longer than {FRAME_MAX} bytes: cut")
        return unreadable(raw, "no [DC4] at the end")
    body = raw[:-1]
    if raw.startswith(B32):
        wrong = _wrong_header(raw)
        if wrong is not None:
            return unreadable(raw, wrong)
        body = raw[B32_SIZE:-1]
    text = printable(body)
    if text is None:
        return unreadable(raw, "a byte that is not printable ASCII")
    width = 3 + options.line_digits
    header, content = text[:width], text[width:]
    receiver, line = header[1:3], header[3:]
    if len(header) < width or not _RECEIVER.fullmatch(receiver) or not _digits(line):
        return unreadable(
            raw, f"header {header!r} is not a digit, receiver (2) and line ({width - 3})"
        )
    digit = header[0]
    if digit == "1":
        if _LINK_TEST.fullmatch(content) is None:
            return unreadable(raw, "protocol 1 but not a link test", receiver, line)
        return Frame(Kind.LINK_TEST, receiver, line)
    if digit == "5":
        return _contact_id(raw, content, receiver, line)
    if digit == "S":
        return _sia(raw, content, receiver, line)
    if digit == "0":
        return _receiver_event(raw, content, receiver, line)
    return unreadable(raw, f"protocol {digit!r} is not read", receiver, line)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _contact_id(raw: bytes, content: str, receiver: str, line: str) -> Frame:
    match = _CONTACT_ID.fullmatch(content)
    if match is None or len(match["account"]) != ACCOUNT_FORMS[match["type"]]:
        return unreadable(raw, "not a Contact ID frame (s18AAAAQXYZGGCCC)", receiver, line)
    event = contact_id_event(match["q"], match["code"], match["area"], match["zone"])
    if isinstance(event, str):
        return unreadable(raw, event, receiver, line)
    return Frame(Kind.EVENT, receiver, line, account=match["account"], events=(event,))


def _sia(raw: bytes, content: str, receiver: str, line: str) -> Frame:
    match = _BRACKETED.fullmatch(content)
    if match is None:
        return unreadable(raw, "SIA content is not one [...]", receiver, line)
    parsed = sia_dcs(match["content"])
    if isinstance(parsed, str):
        return unreadable(raw, parsed, receiver, line)
    if parsed.account is None:
        return unreadable(raw, "SIA content names no account", receiver, line)
    if len(parsed.account) > PANEL_MAX:
        return unreadable(raw, f"SIA account is over {PANEL_MAX} characters", receiver, line)
    events = tuple((event.code, event.area, event.zone) for event in parsed.events)
    return Frame(Kind.EVENT, receiver, line, parsed.account, events, unknown_codes=parsed.unknown)


def _receiver_event(raw: bytes, content: str, receiver: str, line: str) -> Frame:
    match = _BRACKETED.fullmatch(content)
    if match is None:
        return unreadable(raw, "receiver event content is not one [...]", receiver, line)
    text = match["content"]
    account = _ACCOUNT.match(text)
    return Frame(
        Kind.RECEIVER_EVENT,
        receiver,
        line,
        account=account["account"] if account else "",
        text=text,
    )


def answer(frame: Frame, ack: bool) -> bytes:
    """ACK (0x06) or NAK (0x15), in a B32 header when the frame came in one."""
    byte = ACK if ack else NAK
    return B32_ANSWER + byte if frame.wrapped else byte
