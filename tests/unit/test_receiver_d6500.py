"""The Bosch D6600's D6500 mode: the Contact ID and link test frames of its Computer Interface
Manual (with and without the optional header character), the lines sent as letters, malformed
frames and the splitter."""

from __future__ import annotations

import tracemalloc

import pytest

from alarmhub.contactid import QUALIFIERS
from alarmhub.receivers import d6500
from alarmhub.receivers.frames import ACK, FRAME_MAX, NAK, Frame, Kind, Options, escaped

OPTIONS = Options()
LINK_TEST = b"1010" + b" " * 11 + b"@" + b" " * 4 + b"\x14"


def contact_id(line: str = "1", qualifier: str = "1", header: bytes = b"") -> bytes:
    """``h a r r l s a a a a 1 8 Q X Y Z G G C C C t``"""
    return header + f"a01{line} 123418{qualifier}13001015".encode("ascii") + b"\x14"


@pytest.mark.parametrize("header", [b"", b"h", b"\n", b"\x00"])
def test_contact_id_with_and_without_the_header_character(header: bytes) -> None:
    raw = contact_id(header=header)
    assert len(raw) == 21 + len(header)
    frame = d6500.read(raw, OPTIONS)
    assert frame == Frame(Kind.EVENT, "01", "1", "1234", (("E130", "01", "015"),))
    assert (d6500.answer(frame, True), d6500.answer(frame, False)) == (ACK, NAK)


@pytest.mark.parametrize("digit", sorted(QUALIFIERS))
def test_the_qualifier_digits_read_as_letters(digit: str) -> None:
    frame = d6500.read(contact_id(qualifier=digit), OPTIONS)
    assert frame.events == ((QUALIFIERS[digit] + "130", "01", "015"),)


@pytest.mark.parametrize(
    ("letter", "line"),
    [("0", "0"), ("9", "9"), ("A", "10"), ("I", "18"), ("W", "32"), ("X", "33"), ("Y", "34")],
)
def test_lines_10_to_32_and_the_groups_come_as_letters(letter: str, line: str) -> None:
    assert d6500.read(contact_id(line=letter), OPTIONS).line == line


@pytest.mark.parametrize("header", [b"", b"h"])
def test_the_link_test(header: bytes) -> None:
    assert d6500.read(header + LINK_TEST, OPTIONS) == Frame(Kind.LINK_TEST, "01", "0")


@pytest.mark.parametrize(
    "raw",
    [
        b"1A10" + LINK_TEST[4:],  # a link test with a wrong header
        b"101Z" + LINK_TEST[4:],
        b"1010" + b" " * 10 + b"@" + b" " * 5 + b"\x14",
        LINK_TEST[:-2] + b"\x14",  # short
        contact_id(line="Z"),
        contact_id(line="a"),
        contact_id(qualifier="E"),
        contact_id(qualifier="2"),
        b"a011 123418199901015\x14",  # not a DC-05 event
        b"a011 123419113001015\x14",  # not 18
        b"a011 12341811300A015\x14",
        b"a011_123418113001015\x14",
        b"9011    123412345678\x14",  # Acron Super Fast: another message type
        b"a011 1234181130010\xe95\x14",  # not ASCII
        b"a011 123418113001015\r",  # wrong terminator
        b"a011 123418113001015",  # no terminator (the stream ended)
        b"hha011 123418113001015\x14",  # too long
        b"\x14",
        b"x" * FRAME_MAX,  # an over-long frame's head
    ],
)
def test_anything_else_is_unreadable_with_a_reason_and_every_byte(raw: bytes) -> None:
    frame = d6500.read(raw, OPTIONS)
    assert frame.kind == Kind.UNREADABLE and frame.reason
    assert frame.text == escaped(raw) and not frame.events


def test_the_splitter_cuts_several_frames_and_single_bytes_alike() -> None:
    stream = contact_id(header=b"h") + LINK_TEST + contact_id(line="B") + b"a01"
    expected = [contact_id(header=b"h"), LINK_TEST, contact_id(line="B")]
    splitter = d6500.splitter()
    assert splitter.feed(stream) == expected and splitter.flush() == [b"a01"]
    splitter = d6500.splitter()
    assert [f for byte in stream for f in splitter.feed(bytes([byte]))] == expected
    assert [d6500.read(raw, OPTIONS).line for raw in expected] == ["1", "0", "11"]


def test_a_mebibyte_without_dc4_costs_frame_max_bytes() -> None:
    data, splitter = b"a" * (1 << 20), d6500.splitter()
    tracemalloc.start()
    try:
        frames = splitter.feed(data) + splitter.feed(b"\x14" + LINK_TEST)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert frames == [data[:FRAME_MAX], LINK_TEST]
    assert peak < 16 * FRAME_MAX
