"""The frame types every receiver protocol shares: the bounded splitter (terminator, start byte,
over-long frames, memory) and the escaping of unreadable frames."""

from __future__ import annotations

import tracemalloc

import pytest

from alarmhub.receivers.frames import (
    ACK,
    FRAME_MAX,
    NAK,
    Kind,
    Options,
    Splitter,
    escaped,
    printable,
    unreadable,
)
from alarmhub.receivers.protocols import PROTOCOLS

END = 0x14
MIB = 1 << 20


def fed(splitter: Splitter, *chunks: bytes) -> list[bytes]:
    return [frame for chunk in chunks for frame in splitter.feed(chunk)]


def test_frames_end_with_their_terminator_and_several_come_in_one_feed() -> None:
    splitter = Splitter(end=END)
    assert splitter.feed(b"one\x14two\x14thr") == [b"one\x14", b"two\x14"]
    assert splitter.feed(b"ee\x14") == [b"three\x14"]
    assert splitter.buffer == b"" and splitter.discarded == 0


def test_a_stream_fed_one_byte_at_a_time_gives_the_same_frames() -> None:
    stream = b"5011 181234E13001015\x14" * 3 + b"xx\x14"
    splitter = Splitter(end=END)
    assert fed(splitter, *(bytes([byte]) for byte in stream)) == Splitter(end=END).feed(stream)
    assert len(Splitter(end=END).feed(stream)) == 4


def test_a_frame_of_frame_max_bytes_is_whole() -> None:
    frame = b"x" * (FRAME_MAX - 1) + b"\x14"
    splitter = Splitter(end=END)
    assert splitter.feed(frame) == [frame]
    assert fed(Splitter(end=END), frame[:100], frame[100:]) == [frame]
    assert splitter.discarded == 0


@pytest.mark.parametrize("cut", [1, FRAME_MAX - 1, FRAME_MAX, FRAME_MAX + 1, 300])
def test_an_over_long_frame_is_given_once_as_its_head_and_its_tail_is_counted(cut: int) -> None:
    long = b"y" * 299 + b"\x14"
    splitter = Splitter(end=END)
    frames = fed(splitter, long[:cut], long[cut:], b"next\x14")
    assert frames == [long[:FRAME_MAX], b"next\x14"]
    assert splitter.discarded == len(long) - FRAME_MAX
    assert splitter.buffer == b""


def test_a_mebibyte_without_terminator_is_held_in_frame_max_bytes() -> None:
    data, chunk = b"\x00" * MIB, b"\x00" * (MIB // 16)
    splitter = Splitter(end=END)
    tracemalloc.start()
    try:
        frames = splitter.feed(data)
        for _ in range(16):
            frames += splitter.feed(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert frames == [data[:FRAME_MAX]]
    assert splitter.discarded == MIB + MIB - FRAME_MAX
    assert len(splitter.buffer) == 0 and splitter.dropping
    assert peak < 16 * FRAME_MAX
    assert splitter.feed(b"\x14ok\x14") == [b"ok\x14"]


def test_bytes_before_a_start_byte_are_a_frame_of_their_own() -> None:
    splitter = Splitter(end=0x0D, start=0x0A)
    assert splitter.feed(b"noise\n11 OKAY @ \r") == [b"noise", b"\n11 OKAY @ \r"]
    assert splitter.feed(b"\n11 cut short\n11 OKAY @ \r") == [b"\n11 cut short", b"\n11 OKAY @ \r"]
    assert splitter.feed(b"\r") == [b"\r"]
    assert splitter.discarded == 0


def test_a_start_byte_ends_the_tail_of_an_over_long_frame() -> None:
    splitter = Splitter(end=0x0D, start=0x0A)
    frames = fed(splitter, b"\n" + b"z" * 400, b"z" * 10 + b"\n11 OKAY @ \r")
    assert frames == [b"\n" + b"z" * (FRAME_MAX - 1), b"\n11 OKAY @ \r"]
    assert splitter.discarded == 411 - FRAME_MAX


def test_flush_gives_the_unfinished_frame_once() -> None:
    splitter = Splitter(end=END)
    splitter.feed(b"half")
    assert splitter.flush() == [b"half"]
    assert splitter.flush() == []


def test_unreadable_frames_keep_every_byte_with_control_bytes_named() -> None:
    raw = b"\n\x00\xff\x14\r\x06\x15ok"
    assert escaped(raw) == "[LF]\\x00\\xff[DC4][CR][ACK][NAK]ok"
    frame = unreadable(raw, "why", "01", "1")
    assert (frame.kind, frame.text, frame.reason, frame.receiver) == (
        Kind.UNREADABLE,
        escaped(raw),
        "why",
        "01",
    )
    assert (
        printable(b"ok ~") == "ok ~" and printable(b"\x7f") is None and printable(b"\xe9") is None
    )


def test_the_protocols_are_named_as_links_name_them_and_each_answers_its_frames() -> None:
    assert list(PROTOCOLS) == ["surgard", "ademco685", "d6500"]
    link_tests = {
        "surgard": b"1011           @    \x14",
        "ademco685": b"\n11 OKAY @ \r",
        "d6500": b"1010           @    \x14",
    }
    for name, protocol in PROTOCOLS.items():
        splitter = protocol.splitter()
        (raw,) = splitter.feed(link_tests[name])
        frame = protocol.read(raw, Options())
        assert frame.kind == Kind.LINK_TEST, name
        assert (protocol.answer(frame, True), protocol.answer(frame, False)) == (ACK, NAK)
