"""Fuzz the SIA DC-09 receiver's pure parts: cutting frames from a stream (``frame.split``) and
judging each (``receiver.decide``), on raw bytes and on real frames from my-dc09-spt (plain and
AES-encrypted ADM-CID, SIA-DCS, NULL) with bytes replaced, inserted or removed, and then either
left with a wrong CRC or given a right one again, so that mutated bodies reach the parser. Every
frame must get one of the four documented verdicts, and the signals of an accepted frame must be
ones the writer can store."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from my_dc09_spt.msg.dc03_msg import dc03_msg
from my_dc09_spt.msg.dc05_msg import dc05_msg

from alarmhub.contactid import EVENTS
from alarmhub.dc09 import frame, receiver
from alarmhub.dc09.receiver import Reply
from tests.fuzz.common import FUZZ, Counter
from tests.fuzz.strategies import mutated
from tests.support.dc09_panel import KEY, KEYED_ACCOUNT, spt

BUILT_AT = datetime.now(UTC)  # encrypted frames' timestamps are judged against this moment


def _corpus() -> list[bytes]:
    plain, keyed = spt("1234"), spt(KEYED_ACCOUNT, key=KEY)
    cid = dc05_msg.dc05event("1234", {"code": "130", "zone": "15", "area": "1"})
    cid_keyed = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "110", "zone": "3", "area": "2"})
    sia = dc03_msg.dc03event("1234", {"code": "BA", "zone": "7"})
    other = dc05_msg.dc05event("9999", {"code": "130", "zone": "1"})  # names another account
    frames = [
        plain.dc09block(1, "ADM-CID", cid),
        plain.dc09block(2, "SIA-DCS", sia),
        plain.dc09poll(),
        keyed.dc09block(4, "ADM-CID", cid_keyed),
        keyed.dc09poll(),
        keyed.dc09block(6, "ADM-CID", other),
    ]
    return [f.encode() for f in frames]


CORPUS = _corpus()


def key_of(account: str) -> bytes | None:
    return KEY if account == KEYED_ACCOUNT else None


def refit(wire: bytes) -> bytes:
    """A frame whose CRC and length are right again for its (mutated) body."""
    body = wire[9:-1] if len(wire) > 10 else wire
    return b"\n%04X%04X" % (frame.crc16(body), len(body)) + body + b"\r"


frames = st.sampled_from(CORPUS).flatmap(mutated)
pieces = st.one_of(
    st.sampled_from(CORPUS),
    frames,
    frames.map(refit),
    st.binary(max_size=200),
    st.binary(max_size=60).map(refit),
    st.sampled_from([b"\r", b"\n", b"\x00", b" "]),
)


def test_dc09_streams_get_only_documented_verdicts() -> None:
    counter = Counter("DC-09 frame")

    @FUZZ
    @given(stream=st.lists(pieces, min_size=1, max_size=4))
    def one(stream: list[bytes]) -> None:
        counter.runs += 1
        buffer = bytearray(b"".join(stream))
        size = len(buffer)
        cut, junk = frame.split(buffer)
        assert junk is None or isinstance(junk, str)
        assert len(buffer) <= size and sum(len(raw.body) for raw in cut) <= size
        for raw in cut:
            assert len(raw.body) <= frame.MAX_FRAME_BYTES
            decision = receiver.decide(raw, key_of, BUILT_AT)
            assert decision.reply in Reply
            if decision.reply is Reply.ACK:
                assert decision.ack(BUILT_AT).startswith(b"\n")
                for sig in receiver.signals(decision, "1234", 1):
                    f = sig.fields
                    assert 0 < len(f.panel) <= receiver.PANEL_MAX
                    assert f.code[0] in "ERP" and f.code[1:] in EVENTS, f
                    assert len(f.area) == 2 and len(f.zone) == 3
            elif decision.reply is not Reply.IGNORED:
                assert decision.answer is not None and decision.answer.startswith(b"\n")

    one()
    counter.check()
