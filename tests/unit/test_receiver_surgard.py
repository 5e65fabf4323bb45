"""The Sur-Gard automation protocol: every frame form of decisions section 11 and of the
receivers' manuals (their exact examples, ``s`` a space), malformed frames, the B32 header,
the splitter and the frame builders (round-tripped through ``read``)."""

from __future__ import annotations

import tracemalloc

import pytest

from alarmhub.core.surgard import contact_id_frame, link_test_frame
from alarmhub.dc09.events import SIA_CODES
from alarmhub.receivers import surgard
from alarmhub.receivers.frames import ACK, FRAME_MAX, NAK, Frame, Kind, Options, escaped

MLR2 = Options(line_digits=1)
SYSTEM = Options(line_digits=3)


def wire(printed: str) -> bytes:
    """A frame as the manuals print it (``s`` one space, ``[DC4]``) as bytes."""
    return printed.replace("s", " ").replace("[DC4]", "\x14").encode("ascii")


def b32(frame: bytes) -> bytes:
    length = len(frame) + 4
    return b"\x00\x00" + bytes.fromhex(f"{length:04d}") + frame


def test_the_contact_id_example_of_the_decisions() -> None:
    frame = surgard.read(b"5011 181234E13001015\x14", MLR2)
    assert frame == Frame(Kind.EVENT, "01", "1", "1234", (("E130", "01", "015"),))


def test_contact_id_with_the_mlr2_header() -> None:
    frame = surgard.read(wire("5011s181234E12101001[DC4]"), MLR2)
    assert frame == Frame(Kind.EVENT, "01", "1", "1234", (("E121", "01", "001"),))


def test_contact_id_with_the_system_header_reads_as_line_100() -> None:
    frame = surgard.read(wire("501100s181234E12101001[DC4]"), SYSTEM)
    assert frame == Frame(Kind.EVENT, "01", "100", "1234", (("E121", "01", "001"),))


def test_contact_id_with_a_10_digit_account_is_marked_by_58() -> None:
    frame = surgard.read(wire("501100s581234567890R40102003[DC4]"), SYSTEM)
    assert frame == Frame(Kind.EVENT, "01", "100", "1234567890", (("R401", "02", "003"),))
    assert surgard.read(wire("501100s181234567890R40102003[DC4]"), SYSTEM).kind == Kind.UNREADABLE
    assert surgard.read(wire("501100s581234R40102003[DC4]"), SYSTEM).kind == Kind.UNREADABLE


@pytest.mark.parametrize("qualifier", ["E", "R", "P"])
def test_each_qualifier_and_hex_accounts(qualifier: str) -> None:
    frame = surgard.read(wire(f"5011s18B2F0{qualifier}60200000[DC4]"), MLR2)
    assert (frame.account, frame.events) == ("B2F0", ((f"{qualifier}602", "00", "000"),))


def test_the_link_test_of_the_manuals() -> None:
    assert surgard.read(wire("1011sssssssssss@ssss[DC4]"), MLR2) == Frame(Kind.LINK_TEST, "01", "1")
    assert surgard.read(wire("101000sssssssssss@ssss[DC4]"), SYSTEM) == Frame(
        Kind.LINK_TEST, "01", "000"
    )


@pytest.mark.parametrize(
    ("printed", "options"),
    [
        ("1A11sssssssssss@ssss[DC4]", MLR2),  # receiver not digits
        ("10X1sssssssssss@ssss[DC4]", MLR2),
        ("101sssssssssss@ssss[DC4]", MLR2),  # header one digit short
        ("1011sssssssssss@ssss[DC4]", SYSTEM),  # an MLR2 header on a System link
        ("1011sssssssssssXssss[DC4]", MLR2),  # not "@"
        ("1011@ssss[DC4]", MLR2),  # no spaces before "@"
        ("1[DC4]", MLR2),
    ],
)
def test_a_link_test_whose_header_or_body_is_wrong_is_unreadable(
    printed: str, options: Options
) -> None:
    raw = wire(printed)
    frame = surgard.read(raw, options)
    assert frame.kind == Kind.UNREADABLE and frame.reason
    assert frame.text == escaped(raw)


def test_sia_frames_read_through_the_dc09_sia_table() -> None:
    frame = surgard.read(wire("S011[#1234|Nri1BA01][DC4]"), MLR2)
    assert frame == Frame(Kind.EVENT, "01", "1", "1234", ((SIA_CODES["BA"], "01", "001"),))
    frame = surgard.read(b"S01100[#1234|Nda04-22-94ti16:02:15/id22/CL/PA31]\x14", SYSTEM)
    assert (frame.kind, frame.receiver, frame.line, frame.account) == (
        Kind.EVENT,
        "01",
        "100",
        "1234",
    )
    assert frame.events == ((SIA_CODES["CL"], "00", "000"), (SIA_CODES["PA"], "00", "031"))


def test_sia_codes_the_table_lacks_are_named_and_a_frame_of_none_is_unreadable() -> None:
    frame = surgard.read(b"S011[#1234|NBA01/ZZ02]\x14", MLR2)
    assert frame.kind == Kind.EVENT and frame.unknown_codes == ("ZZ",)
    assert surgard.read(b"S011[#1234|NZZ02]\x14", MLR2).kind == Kind.UNREADABLE
    assert surgard.read(b"S011[|NBA01]\x14", MLR2).reason == "SIA content names no account"
    assert surgard.read(b"S011#1234|NBA01\x14", MLR2).kind == Kind.UNREADABLE
    assert surgard.read(b"S011[#1234567890|NBA01]\x14", MLR2).account == "1234567890"
    assert surgard.read(b"S011[#12345678901|NBA01]\x14", MLR2).kind == Kind.UNREADABLE
    assert surgard.read(b"S011[#1234|N!!]\x14", MLR2).kind == Kind.UNREADABLE


def test_the_receivers_own_events() -> None:
    frame = surgard.read(wire("001100[#0000|NRU0000][DC4]"), SYSTEM)
    assert frame == Frame(Kind.RECEIVER_EVENT, "01", "100", "0000", text="#0000|NRU0000")
    frame = surgard.read(b"0011[#0000|Nxxyy]\x14", MLR2)
    assert (frame.kind, frame.text) == (Kind.RECEIVER_EVENT, "#0000|Nxxyy")
    assert surgard.read(b"0011#0000|Nxxyy\x14", MLR2).kind == Kind.UNREADABLE


@pytest.mark.parametrize(
    ("raw", "options"),
    [
        (wire("101100ss123456s1G123[DC4]"), SYSTEM),  # basic 4x2
        (wire("6011ssssss1234XXYYYY[DC4]"), MLR2),  # BFSK
        (b"5011 181234E1300\x14", MLR2),  # truncated
        (b"5011 181234E13001015", MLR2),  # no terminator (the stream ended)
        (b"5011 181234E13001015\r", MLR2),  # wrong terminator
        (b"5011 181234E13001015\r\x14", MLR2),
        (b"5011 181234E130010\xe915\x14", MLR2),  # not ASCII
        (b"5011 181234E130\x0001015\x14", MLR2),
        (b"5011 181234X13001015\x14", MLR2),  # qualifier
        (b"5011 181234E99901015\x14", MLR2),  # not a DC-05 event
        (b"5011 181234E1300A015\x14", MLR2),  # area not digits
        (b"5011 181234E130010A5\x14", MLR2),
        (b"5011 191234E13001015\x14", MLR2),  # message type
        (b"50111181234E13001015\x14", MLR2),  # no space
        (b"\x14", MLR2),
        (b"Z011 181234E13001015\x14", MLR2),
        (b"x" * FRAME_MAX, MLR2),  # an over-long frame's head
    ],
)
def test_anything_else_is_unreadable_with_a_reason_and_every_byte(
    raw: bytes, options: Options
) -> None:
    frame = surgard.read(raw, options)
    assert frame.kind == Kind.UNREADABLE and frame.reason
    assert frame.text == escaped(raw) and not frame.events
    assert surgard.answer(frame, True) == ACK


def test_a_frame_in_a_b32_header_is_read_and_answered_in_one() -> None:
    frame = surgard.read(b32(b"5011 181234E13001015\x14"), MLR2)
    assert frame == Frame(Kind.EVENT, "01", "1", "1234", (("E130", "01", "015"),), wrapped=True)
    assert surgard.answer(frame, True) == b"\x00\x00\x00\x05\x06"
    assert surgard.answer(frame, False) == b"\x00\x00\x00\x05\x15"
    plain = surgard.read(b"5011 181234E13001015\x14", MLR2)
    assert (surgard.answer(plain, True), surgard.answer(plain, False)) == (ACK, NAK)


@pytest.mark.parametrize(
    "raw",
    [
        b"\x00\x00\x00\x99" + b"5011 181234E13001015\x14",  # length wrong
        b"\x00\x00\x00\x2a" + b"5011 181234E13001015\x14",  # not BCD
        b"\x00\x00\x14",
        b"\x00\x00\x00\x25\x00\x00\x00\x25" + b"5011 181234E1300\x14",
    ],
)
def test_a_wrong_b32_header_is_unreadable_and_answered_in_one(raw: bytes) -> None:
    frame = surgard.read(raw, MLR2)
    assert frame.kind == Kind.UNREADABLE and frame.wrapped and frame.reason
    assert surgard.answer(frame, True) == b"\x00\x00\x00\x05\x06"


def test_the_splitter_never_takes_a_b32_length_for_the_terminator() -> None:
    sia = b"S011[#123456|N" + b"/".join([b"BA01"] * 19) + b"]\x14"
    assert len(sia) + 4 == 114  # its header holds the byte 0x14, BCD "14"
    stream = b32(sia) + b32(b"1011           @    \x14") + b"5011 181234E13001015\x14"
    expected = [b32(sia), b32(b"1011           @    \x14"), b"5011 181234E13001015\x14"]
    assert surgard.splitter().feed(stream) == expected
    splitter = surgard.splitter()
    assert [f for byte in stream for f in splitter.feed(bytes([byte]))] == expected
    frames = [surgard.read(raw, MLR2) for raw in expected]
    assert [f.kind for f in frames] == [Kind.EVENT, Kind.LINK_TEST, Kind.EVENT]
    assert [f.wrapped for f in frames] == [True, True, False]


def test_the_splitter_cuts_several_frames_and_single_bytes_alike() -> None:
    stream = b"".join(
        [
            b"1011           @    \x14",
            b"5011 181234E13001015\x14",
            b"S011[#1234|Nri1BA01]\x14",
            b"0011[#0000|NRU0000]\x14",
        ]
    )
    whole = surgard.splitter().feed(stream)
    splitter = surgard.splitter()
    assert [f for byte in stream for f in splitter.feed(bytes([byte]))] == whole
    kinds = [surgard.read(raw, MLR2).kind for raw in whole]
    assert kinds == [Kind.LINK_TEST, Kind.EVENT, Kind.EVENT, Kind.RECEIVER_EVENT]


def test_a_mebibyte_without_dc4_costs_frame_max_bytes() -> None:
    data, splitter = b"5" * (1 << 20), surgard.splitter()
    tracemalloc.start()
    try:
        frames = splitter.feed(data) + splitter.feed(b"\x14" + b"5011 181234E13001015\x14")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert frames == [data[:FRAME_MAX], b"5011 181234E13001015\x14"]
    assert splitter.discarded == len(data) - FRAME_MAX + 1
    assert peak < 16 * FRAME_MAX
    assert surgard.read(frames[0], MLR2).kind == Kind.UNREADABLE


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ((1, 1, "1234", "E130", "01", "015"), MLR2),
        ((99, 9, "B2F0", "R401", "02", "999"), MLR2),
        ((1, 100, "1234", "P602", "00", "000", 3), SYSTEM),
        ((1, 1, "12", "E130", "01", "015"), MLR2),  # padded to 4
        ((1, 1, "1234567890", "E130", "01", "015"), MLR2),  # the 10-digit form
    ],
)
def test_contact_id_frames_built_read_back(args: tuple, options: Options) -> None:
    raw = contact_id_frame(*args)
    receiver, line, account, code, area, zone = args[:6]
    frame = surgard.read(raw, options)
    assert frame.kind == Kind.EVENT
    assert (int(frame.receiver), int(frame.line)) == (receiver, line)
    assert frame.account == account.zfill(4) and frame.events == ((code, area, zone),)


def test_the_built_contact_id_frame_is_the_decisions_example() -> None:
    assert contact_id_frame(1, 1, "1234", "E130", "01", "015") == wire("5011s181234E13001015[DC4]")
    assert link_test_frame(1, 1) == wire("1011sssssssssss@ssss[DC4]")
    assert surgard.read(link_test_frame(7, 123, 3), SYSTEM) == Frame(Kind.LINK_TEST, "07", "123")


@pytest.mark.parametrize(
    "args",
    [
        (100, 1, "1234", "E130", "01", "015"),
        (1, 10, "1234", "E130", "01", "015"),
        (1, 1, "", "E130", "01", "015"),
        (1, 1, "12345678901", "E130", "01", "015"),
        (1, 1, "12 4", "E130", "01", "015"),
        (1, 1, "1234", "X130", "01", "015"),
        (1, 1, "1234", "E999", "01", "015"),
        (1, 1, "1234", "E1301", "01", "015"),
        (1, 1, "1234", "E130", "1", "015"),
        (1, 1, "1234", "E130", "01", "15"),
    ],
)
def test_the_builder_refuses_what_cannot_be_sent(args: tuple) -> None:
    with pytest.raises(ValueError):
        contact_id_frame(*args)
