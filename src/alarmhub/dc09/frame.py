"""DC-09 framing: frame boundaries in a byte stream, the CRC and the length check. No I/O.

A frame is ``LF crc length body CR``: the CRC (CRC-16/ARC) is 4 hex digits or, from some panels,
2 binary bytes; the length is 4 hex digits; both cover ``body``, from the first ``"`` to before
the CR. Eldes panels count the CR in both: such a frame is accepted when CRC and length agree
with that reading (``docs/dc09.md``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import fastcrc

LF = 0x0A
CR = 0x0D
MAX_FRAME_BYTES = 4096  # LF to CR; the length field's largest value is 0x0FFF
SEPARATORS = b"\r\n\x00 \t"  # tolerated between frames
# at an LF: a binary CRC (LF cc llll "), else (tried second, as a regular expression tries its
# alternatives) an ASCII one (LF cccc llll ")
_HEADER = re.compile(rb'\n(?:..([0-9A-Fa-f]{4})"|([0-9A-Fa-f]{4})([0-9A-Fa-f]{4})")', re.DOTALL)

# CRC-16/ARC (polynomial 0x8005 reflected, initial value 0), as DC-09 uses it: ``crc16(data)``
crc16 = fastcrc.crc16.arc
# the named tuples of the frame path are built with ``new(Type, (fields...))``: the __new__ that
# a named tuple is given is a Python function, at twice the cost
new = tuple.__new__


class RawFrame(NamedTuple):
    """One frame cut from a stream, not yet checked."""

    crc: int
    length: int
    body: bytes

    def valid(self) -> bool:
        """True when the CRC and the length match the body (or, Eldes, the body and its CR)."""
        body = self.body
        if self.length == len(body) and self.crc == crc16(body):
            return True
        return self.length == len(body) + 1 and self.crc == crc16(body + b"\r")


def _header(buffer: bytearray, start: int) -> tuple[int, int, int] | str | None:
    """At an LF: (crc, length, offset of the body) of a well-formed header, None when more bytes
    are needed to tell, or why the bytes cannot be a header."""
    match = _HEADER.match(buffer, start)
    if match is None:
        return None if len(buffer) - start <= 9 else "not a DC-09 header"
    binary_length, crc, length = match.groups()
    if binary_length is not None:
        return (buffer[start + 1] << 8) | buffer[start + 2], int(binary_length, 16), start + 7
    return int(crc, 16), int(length, 16), start + 9


def split(buffer: bytearray) -> tuple[list[RawFrame], str | None]:
    """Take every complete frame from the start of ``buffer`` (consumed in place; what is left
    is the start of the next frame), and why the stream cannot be DC-09, if it cannot: bytes
    other than separators between frames, a malformed header, a frame over the size limit."""
    frames: list[RawFrame] = []
    position = 0
    size = len(buffer)
    junk: str | None = None
    while position < size:
        byte = buffer[position]
        if byte != LF:
            if byte in SEPARATORS:
                position += 1
                continue
            junk = f"unexpected byte 0x{byte:02x} outside a frame"
            break
        header = _header(buffer, position)
        if header is None:
            break
        if isinstance(header, str):
            if buffer[position + 1] in SEPARATORS:
                position += 1  # an LF among separators, not a frame
                continue
            junk = header
            break
        crc, length, body_start = header
        end = buffer.find(b"\r", body_start, position + MAX_FRAME_BYTES)
        if end < 0:
            if size - position >= MAX_FRAME_BYTES:
                junk = "frame too long"
            break
        frames.append(new(RawFrame, (crc, length, bytes(buffer[body_start:end]))))
        position = end + 1
    if position:
        del buffer[:position]
    return frames, junk
