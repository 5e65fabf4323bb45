"""What every receiver protocol module gives: a frame read into a :class:`Frame`, the stream
cut into frames by a bounded :class:`Splitter`, and the one-byte answers. No I/O.

A protocol module (``surgard``, ``ademco685``, ``d6500``) provides ``splitter() -> Splitter``,
``read(raw: bytes, options: Options) -> Frame`` and ``answer(frame: Frame, ack: bool) ->
bytes``; :data:`PROTOCOLS` names them.
"""

from __future__ import annotations

import re
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
_PRINTABLE = re.compile(rb"[\x20-\x7e]*")


def printable(raw: bytes) -> str | None:
    """``raw`` as text when it is all printable ASCII, else None."""
    return raw.decode("ascii") if _PRINTABLE.fullmatch(raw) else None


def unreadable(raw: bytes, reason: str, receiver: str = "", line: str = "") -> Frame:
    """A frame that could not be read, kept as received (with its header's numbers when they
    could be read)."""
    return Frame(Kind.UNREADABLE, receiver, line, text=escaped(raw), reason=reason)


class Splitter:
    """Cuts a byte stream into raw frames, holding at most FRAME_MAX bytes of an unfinished
    one: ``feed(data)`` returns the frames completed by ``data`` (each with its terminator),
    and an over-long frame as its first FRAME_MAX bytes (the rest up to its terminator is
    counted in :attr:`discarded` and dropped: no receiver sends such a frame).

    ``end`` is the terminator byte. ``start``, when the protocol has one (Ademco's LF), begins
    a frame: bytes held before it are returned as a frame of their own (without terminator,
    so they read as unreadable), never dropped, and it ends the dropping of an over-long frame.
    Protocol modules give their bytes, or subclass it (:meth:`_find_end`)."""

    def __init__(self, end: int, start: int | None = None) -> None:
        self.end = end
        self.start = start
        self.buffer = bytearray()
        self.discarded = 0
        self.dropping = False  # inside the tail of an over-long frame

    def _find_end(self, data: bytes, position: int) -> int:
        """Where the terminator of the frame being held lies in ``data`` (from ``position``),
        or -1."""
        return data.find(self.end, position)

    def _find_start(self, data: bytes, position: int) -> int:
        """Where the next frame begins in ``data`` (from ``position``), or -1: a start byte
        that is not the first byte of the frame being held."""
        if self.start is None:
            return -1
        if not self.buffer and data[position] == self.start:
            position += 1
        return data.find(self.start, position)

    def _emit(self, frames: list[bytes], tail: bytes) -> None:
        frames.append(bytes(self.buffer) + tail)
        self.buffer.clear()

    def feed(self, data: bytes) -> list[bytes]:
        frames: list[bytes] = []
        position, size = 0, len(data)
        while position < size:
            if self.dropping:
                end = data.find(self.end, position)
                start = -1 if self.start is None else data.find(self.start, position)
                if start != -1 and (end == -1 or start < end):
                    self.discarded += start - position
                    position, self.dropping = start, False
                elif end != -1:
                    self.discarded += end + 1 - position
                    position, self.dropping = end + 1, False
                else:
                    self.discarded += size - position
                    position = size
                continue
            room = FRAME_MAX - len(self.buffer)
            end = self._find_end(data, position)
            start = self._find_start(data, position)
            if end != -1 and (start == -1 or end < start):
                cut = end + 1  # the frame ends with its terminator
            elif start != -1:
                cut = start  # the bytes before a start byte are a frame of their own
            else:
                cut = -1
            if cut != -1 and cut - position <= room:
                self._emit(frames, data[position:cut])
                position = cut
            elif cut != -1:  # over-long, and its end is in this feed
                self._emit(frames, data[position : position + room])
                self.discarded += cut - position - room
                position = cut
            elif size - position < room:
                self.buffer += data[position:]
                position = size
            else:  # FRAME_MAX bytes without an end: over-long
                self._emit(frames, data[position : position + room])
                self.discarded += size - position - room
                position, self.dropping = size, True
        return frames

    def flush(self) -> list[bytes]:
        """The unfinished frame, when the stream ends (a closed connection): returned, not
        dropped, so that it is kept as unreadable."""
        held = [bytes(self.buffer)] if self.buffer else []
        self.buffer.clear()
        self.dropping = False
        return held
