"""Fuzz the receiver protocols (``receivers/surgard``, ``ademco685``, ``d6500``): streams of
their real frames (built, and mutated: bytes replaced, inserted or removed), raw bytes, runs
longer than a frame may be and B32 headers, fed to the protocol's splitter in chunks of any
size, and every frame cut read and answered. Per protocol: the splitter holds at most
FRAME_MAX bytes and accounts for every byte fed (frames, discarded tail, held), cuts the same
frames whatever the chunks, ``read`` never raises, every event is a storable Contact ID event,
every unreadable frame keeps its bytes and says why, and every answer is ACK or NAK (wrapped
in a B32 header for a frame that came in one)."""

from __future__ import annotations

from itertools import pairwise
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

from alarmhub.contactid import EVENTS
from alarmhub.core.surgard import contact_id_frame, link_test_frame
from alarmhub.dc09.receiver import PANEL_MAX
from alarmhub.receivers import ademco685, d6500, surgard
from alarmhub.receivers.frames import ACK, FRAME_MAX, NAK, Frame, Kind, Options, escaped
from alarmhub.receivers.protocols import PROTOCOLS
from tests.fuzz.common import EXAMPLES, FUZZ
from tests.fuzz.strategies import mutated

SUMMARY = "0 crashes, 0 answers outside the set"


def _b32(frame: bytes) -> bytes:
    return b"\x00\x00" + bytes.fromhex(f"{len(frame) + 4:04d}") + frame


_SURGARD = [
    contact_id_frame(1, 1, "1234", "E130", "01", "015"),
    contact_id_frame(12, 100, "B2F0", "R401", "02", "003", 3),
    contact_id_frame(1, 1, "1234567890", "P602", "00", "000"),
    link_test_frame(1, 1),
    link_test_frame(1, 0, 3),
    b"S011[#1234|Nri1BA01]\x14",
    b"S011[#1234567890|NBA01/ZZ02]\x14",
    b"S01100[#1234|Nda04-22-94ti16:02:15/id22/CL/PA31]\x14",
    b"0011[#0000|NRU0000]\x14",
    b"101100    123456 1G123\x14",
]
CORPUS: dict[str, list[bytes]] = {
    "surgard": _SURGARD + [_b32(frame) for frame in _SURGARD[:4]],
    "ademco685": [
        b"\n11 1234 18 E130 01 C015\r",
        b"\n29 B2F0 18 R401 03 U012\r",
        b"\n11 OKAY @ \r",
        b"\n11 1234 E\r",
    ],
    "d6500": [
        b"a011 123418113001015\x14",
        b"ha01W 123431300200003\x14",
        b"1010           @    \x14",
        b"h1010           @    \x14",
        b"9011    123412345678\x14",
    ],
}
SPECIAL = [b"\x14", b"\n", b"\r", b"\x00\x00", b"\x00\x00\x01\x14", b"@", b" "]


def _pieces(name: str) -> st.SearchStrategy[bytes]:
    corpus = CORPUS[name]
    return st.one_of(
        st.sampled_from(corpus),
        st.sampled_from(corpus).flatmap(mutated),
        st.binary(max_size=64),
        st.sampled_from(SPECIAL),
        st.tuples(st.sampled_from([*SPECIAL[:4], b"5", b"a"]), st.integers(1, 3 * FRAME_MAX)).map(
            lambda run: run[0] * run[1]
        ),
    )


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in pairwise(points)]


def _check(name: str, protocol: ModuleType, raw: bytes, frame: Frame) -> None:
    assert isinstance(frame, Frame) and frame.kind in Kind, (name, raw)
    if frame.kind is Kind.EVENT:
        assert frame.account and frame.events, (name, raw, frame)
        assert len(frame.account) <= PANEL_MAX and frame.account.isalnum(), (name, raw, frame)
        for code, area, zone in frame.events:
            assert code[0] in "ERP" and code[1:] in EVENTS, (name, raw, frame)
            assert len(area) == 2 and area.isdigit() and len(zone) == 3 and zone.isdigit()
    if frame.kind is Kind.UNREADABLE:
        assert frame.reason and frame.text == escaped(raw), (name, raw, frame)
    if frame.kind is not Kind.UNREADABLE:
        assert frame.receiver.isdigit() and frame.line.isdigit(), (name, raw, frame)
    for ack in (True, False):
        answer = protocol.answer(frame, ack)
        byte = ACK if ack else NAK
        assert answer == (b"\x00\x00\x00\x05" + byte if frame.wrapped else byte), (name, raw)


def _fuzz(name: str) -> int:
    protocol = PROTOCOLS[name]
    runs = 0

    @FUZZ
    @given(
        stream=st.lists(_pieces(name), min_size=1, max_size=6),
        cuts=st.lists(st.integers(0, 4 * FRAME_MAX), max_size=8),
        line_digits=st.integers(1, 3),
    )
    def one(stream: list[bytes], cuts: list[int], line_digits: int) -> None:
        nonlocal runs
        runs += 1
        data = b"".join(stream)
        whole = protocol.splitter()
        expected = whole.feed(data)
        splitter = protocol.splitter()
        frames: list[bytes] = []
        for chunk in _chunks(data, cuts):
            frames += splitter.feed(chunk)
            assert len(splitter.buffer) < FRAME_MAX, (name, data)
        assert frames == expected, (name, data, cuts)
        held = len(splitter.buffer)
        frames += splitter.flush()
        assert sum(map(len, frames)) + splitter.discarded == len(data), (name, data)
        assert held == 0 or len(frames[-1]) == held
        options = Options(line_digits=line_digits)
        for raw in frames:
            assert 0 < len(raw) <= FRAME_MAX, (name, raw)
            _check(name, protocol, raw, protocol.read(raw, options))

    one()
    return runs


def test_receiver_frames_are_read_and_answered_within_bounds() -> None:
    assert set(PROTOCOLS) == set(CORPUS)
    assert {name: PROTOCOLS[name] for name in CORPUS} == {
        "surgard": surgard,
        "ademco685": ademco685,
        "d6500": d6500,
    }
    runs = {name: _fuzz(name) for name in CORPUS}
    each = ", ".join(f"{name} {count}" for name, count in runs.items())
    print(f"\nreceiver frames: {each} inputs, {SUMMARY}")
    assert all(count >= EXAMPLES for count in runs.values())
