"""The Ademco 685 automation protocol: the frame forms of decisions section 11 and of the
receivers' manuals (their exact examples), malformed frames, and the LF-to-CR splitter."""

from __future__ import annotations

import tracemalloc

import pytest

from alarmhub.receivers import ademco685
from alarmhub.receivers.frames import ACK, FRAME_MAX, NAK, Frame, Kind, Options, escaped

OPTIONS = Options()


def wire(printed: str) -> bytes:
    """A frame as the manuals print it (``s`` one space, ``[LF]``, ``[CR]``) as bytes."""
    text = printed.replace("[LF]", "\n").replace("[CR]", "\r").replace("s", " ")
    return text.encode("ascii")


def test_the_contact_id_example() -> None:
    frame = ademco685.read(wire("[LF]11s1234s18sE130s01sC015[CR]"), OPTIONS)
    assert frame == Frame(Kind.EVENT, "1", "1", "1234", (("E130", "01", "015"),))
    assert (ademco685.answer(frame, True), ademco685.answer(frame, False)) == (ACK, NAK)


def test_a_user_event_and_a_hex_account() -> None:
    frame = ademco685.read(wire("[LF]29sB2F0s18sR401s03sU012[CR]"), OPTIONS)
    assert frame == Frame(Kind.EVENT, "2", "9", "B2F0", (("R401", "03", "012"),))


def test_the_link_test() -> None:
    assert ademco685.read(wire("[LF]11sOKAYs@s[CR]"), OPTIONS) == Frame(Kind.LINK_TEST, "1", "1")


@pytest.mark.parametrize(
    "raw",
    [
        wire("[LF]11s1234sE[CR]"),  # 4x1 low speed
        wire("[LF]A1sOKAYs@s[CR]"),  # a link test with a wrong header
        wire("[LF]111sOKAYs@s[CR]"),
        wire("[LF]11sOKAYs@[CR]"),
        wire("[LF]11s1234s18sE130s01sX015[CR]"),  # neither C nor U
        wire("[LF]11s1234s18sE130s01s015[CR]"),  # truncated
        wire("[LF]11s1234s18sX130s01sC015[CR]"),
        wire("[LF]11s1234s18sE999s01sC015[CR]"),
        wire("[LF]11s12345s18sE130s01sC015[CR]"),
        b"11 1234 18 E130 01 C015\r",  # no LF
        b"\n11 1234 18 E130 01 C015",  # no CR (the stream ended)
        b"\n11 1234 18 E130 01 C015\x14",  # wrong terminator
        b"\n11 1234 18 E130 01 C\xc3\xa915\r",  # not ASCII
        b"\n11 1234 18 E130 01 C0\t5\r",
        b"\r",
        b"\n" + b"x" * (FRAME_MAX - 1),  # an over-long frame's head
    ],
)
def test_anything_else_is_unreadable_with_a_reason_and_every_byte(raw: bytes) -> None:
    frame = ademco685.read(raw, OPTIONS)
    assert frame.kind == Kind.UNREADABLE and frame.reason
    assert frame.text == escaped(raw) and not frame.events


def test_the_splitter_cuts_from_lf_to_cr_and_keeps_what_lies_between() -> None:
    event, test = wire("[LF]11s1234s18sE130s01sC015[CR]"), wire("[LF]11sOKAYs@s[CR]")
    stream = event + b"junk" + test + b"\n11 12" + event
    expected = [event, b"junk", test, b"\n11 12", event]
    assert ademco685.splitter().feed(stream) == expected
    splitter = ademco685.splitter()
    assert [f for byte in stream for f in splitter.feed(bytes([byte]))] == expected
    kinds = [ademco685.read(raw, OPTIONS).kind for raw in expected]
    assert kinds == [Kind.EVENT, Kind.UNREADABLE, Kind.LINK_TEST, Kind.UNREADABLE, Kind.EVENT]


def test_a_mebibyte_without_cr_costs_frame_max_bytes() -> None:
    data, splitter = b"\n" + b"1" * (1 << 20), ademco685.splitter()
    event = wire("[LF]11s1234s18sE130s01sC015[CR]")
    tracemalloc.start()
    try:
        frames = splitter.feed(data) + splitter.feed(event)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert frames == [data[:FRAME_MAX], event]
    assert splitter.discarded == len(data) - FRAME_MAX
    assert peak < 16 * FRAME_MAX
