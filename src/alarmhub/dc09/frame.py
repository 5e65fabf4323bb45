"""DC-09 framing: frame boundaries in a byte stream, the CRC and the length check. No I/O.

A frame is ``LF crc length body CR``: the CRC (CRC-16/ARC) is 4 hex digits or, from some panels,
2 binary bytes; the length is 4 hex digits; both cover ``body``, from the first ``"`` to before
the CR. Eldes panels count the CR in both: such a frame is accepted when CRC and length agree
with that reading (``docs/dc09.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import fastcrc

LF = 0x0A
CR = 0x0D
QUOTE = 0x22
MAX_FRAME_BYTES = 4096  # LF to CR; the length field's largest value is 0x0FFF
SEPARATORS = b"\r\n\x00 \t"  # tolerated between frames
_HEX = frozenset(b"0123456789ABCDEFabcdef")


# CRC-16/ARC (polynomial 0x8005 reflected, initial value 0), as DC-09 uses it: ``crc16(data)``
crc16 = fastcrc.crc16.arc


@dataclass(frozen=True, slots=True)
class RawFrame:
    """One frame cut from a stream, not yet checked."""

    crc: int
    length: int
    body: bytes

    def valid(self) -> bool:
        """True when the CRC and the length match the body (or, Eldes, the body and its CR)."""
        if self.length == len(self.body) and self.crc == crc16(self.body):
            return True
        return self.length == len(self.body) + 1 and self.crc == crc16(self.body + b"\r")


def _hex(chunk: bytes | bytearray) -> bool:
    return len(chunk) > 0 and all(b in _HEX for b in chunk)


def _header(buffer: bytearray, start: int) -> tuple[int, int, int] | str | None:
    """At an LF: (crc, length, offset of the body) of a well-formed header, None when more bytes
    are needed to tell, or why the bytes cannot be a header."""
    available = len(buffer) - start
    # binary CRC: LF cc llll " (the quote at +7); ASCII: LF cccc llll " (the quote at +9)
    if available > 7 and buffer[start + 7] == QUOTE and _hex(buffer[start + 3 : start + 7]):
        crc = (buffer[start + 1] << 8) | buffer[start + 2]
        return crc, int(buffer[start + 3 : start + 7], 16), start + 7
    if available <= 9:
        return None
    if buffer[start + 9] == QUOTE and _hex(buffer[start + 1 : start + 9]):
        crc = int(buffer[start + 1 : start + 5], 16)
        return crc, int(buffer[start + 5 : start + 9], 16), start + 9
    return "not a DC-09 header"


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
        frames.append(RawFrame(crc, length, bytes(buffer[body_start:end])))
        position = end + 1
    del buffer[:position]
    return frames, junk
