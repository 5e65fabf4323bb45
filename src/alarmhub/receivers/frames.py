"""What every receiver protocol module gives: a frame read into a :class:`Frame`, the stream
cut into frames by a bounded :class:`Splitter`, and the one-byte answers. No I/O.

A protocol module (``surgard``, ``ademco685``, ``d6500``) provides ``splitter() -> Splitter``,
``read(raw: bytes, options: Options) -> Frame`` and ``answer(frame: Frame, ack: bool) ->
bytes``; :data:`PROTOCOLS` names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

ACK = b"\x06"
NAK = b"\x15"
FRAME_MAX = 256
"""A frame longer than this (no receiver sends one) is cut off and kept as unreadable."""


class Kind(StrEnum):
    """What a frame is."""

    EVENT = "event"  # an alarm event: Contact ID or SIA, one or more events of one account
    LINK_TEST = "link test"  # the receiver's heartbeat
    RECEIVER_EVENT = "receiver event"  # the receiver's own trouble (RXEVT)
    UNREADABLE = "unreadable"  # anything else (RXDAT)


@dataclass(frozen=True, slots=True)
class Options:
    """A link's settings that change how its frames read."""

    line_digits: int = 1  # Sur-Gard: the line number's width in the header (MLR2 1, System 3)


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame as read. ``receiver`` and ``line`` are the header's numbers as digits (""
    when the frame has none); ``events`` are (code, area, zone) as the DC-09 receiver gives
    them (code ``E130``: qualifier E/R/P then the event code; area 2 digits; zone 3 digits);
    ``text`` is a receiver event's content, or an unreadable frame shown with its control bytes
    escaped (:func:`escaped`); ``reason`` says why it could not be read; ``wrapped`` is set when
    the frame came in a Sur-Gard B32 TCP header (its answer is wrapped too)."""

    kind: Kind
    receiver: str = ""
    line: str = ""
    account: str = ""
    events: tuple[tuple[str, str, str], ...] = ()
    text: str = ""
    reason: str = ""
    wrapped: bool = False
    unknown_codes: tuple[str, ...] = field(default=())


def escaped(raw: bytes) -> str:
    """``raw`` as printable ASCII: control bytes and bytes above 0x7E as ``[DC4]``-style names
    where the receivers' manuals use them (``[LF]``, ``[CR]``, ``[DC4]``), else ``\\xNN``."""
    out = []
    for byte in raw:
        name = _NAMES.get(byte)
        if name is not None:
            out.append(name)
        elif 0x20 <= byte <= 0x7E:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


_NAMES = {0x0A: "[LF]", 0x0D: "[CR]", 0x14: "[DC4]", 0x06: "[ACK]", 0x15: "[NAK]"}


def unreadable(raw: bytes, reason: str, receiver: str = "", line: str = "") -> Frame:
    """A frame that could not be read, kept as received (with its header's numbers when they
    could be read)."""
    return Frame(Kind.UNREADABLE, receiver, line, text=escaped(raw), reason=reason)


class Splitter:
    """Cuts a byte stream into raw frames, holding at most FRAME_MAX bytes of an unfinished
    one: ``feed(data)`` returns the frames completed by ``data`` (each with its terminator),
    and an over-long frame as its first FRAME_MAX bytes (the rest up to its terminator is
    counted in :attr:`discarded` and dropped: no receiver sends such a frame). Protocol
    modules subclass it for their start and end bytes."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.discarded = 0

    def feed(self, data: bytes) -> list[bytes]:
        raise NotImplementedError
