"""The DC-09 protocol modules without I/O: framing, CRC, AES, parsing, events and answers,
against the reference vectors of ``tests/data/dc09_test_vectors.tsv`` (frames from real
panels and from other receivers' test suites) and frames built by the independent transmitter
``my-dc09-spt``."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st
from my_dc09_spt.msg.dc03_msg import dc03_msg
from my_dc09_spt.msg.dc05_msg import dc05_msg
from my_dc09_spt.msg.dc09_msg import dc09_msg

from alarmhub.contactid import EVENTS
from alarmhub.core.dc09 import key_problem
from alarmhub.dc09 import answer, crypto, events, frame, message, receiver
from alarmhub.dc09.receiver import Reply
from alarmhub.store.dc09 import UNUSABLE_KEY

VECTORS = Path(__file__).resolve().parent.parent / "data" / "dc09_test_vectors.tsv"
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
KEY = bytes.fromhex("000102030405060708090A0B0C0D0E0F")
PYSIAALARM_TEST_KEY = b"AAAAAAAAAAAAAAAA"  # pysiaalarm's tests' key, as ASCII bytes


@dataclass(frozen=True)
class Vector:
    source: str
    frame: str
    crc_ok: bool
    len_ok: bool

    @property
    def valid(self) -> bool:
        return self.crc_ok and self.len_ok

    def wire(self) -> bytes:
        return b"\n" + self.frame.encode("ascii") + b"\r"


def _vectors() -> list[Vector]:
    lines = [line for line in VECTORS.read_text().splitlines() if line]
    header = lines[0].lstrip("# ").split("\t")
    assert header[:4] == ["source", "frame(without LF/CR)", "crc_ok", "len_ok"], header
    return [
        Vector(row[0], row[1], row[2] == "True", row[3] == "True")
        for row in csv.reader(lines[1:], delimiter="\t")
    ]


ALL_VECTORS = _vectors()
ELDES = next(v for v in ALL_VECTORS if "Eldes" in v.source)


def one_frame(wire: bytes) -> frame.RawFrame:
    frames, junk = frame.split(bytearray(wire))
    assert junk is None and len(frames) == 1, (frames, junk)
    return frames[0]


def decide(wire: bytes, keys: dict[str, bytes] | None = None, now: datetime = NOW):
    return receiver.decide(one_frame(wire), (keys or {}).get, now)


# --- the reference vectors ----------------------------------------------------------------------


def test_the_vector_file_has_valid_and_invalid_frames() -> None:
    assert sum(v.valid for v in ALL_VECTORS) >= 10
    assert sum(not v.valid for v in ALL_VECTORS) >= 5


@pytest.mark.parametrize("vector", ALL_VECTORS, ids=lambda v: v.source[:40])
def test_crc_and_length_check_agrees_with_the_vector_file(vector: Vector) -> None:
    raw = one_frame(vector.wire())
    if vector is ELDES:
        # CRC and length count the trailing CR: wrong by the standard, accepted as a quirk
        assert not vector.valid and raw.valid()
    else:
        assert raw.valid() is vector.valid


# Each valid vector and what it becomes: (reply, Contact ID codes, panel)
EXPECTED = {
    "CreepPork": (Reply.ACK, ["E602"], "1002"),
    "fioletoven/dc09 common/src/dc09/message.tests.rs to_string_test": (
        Reply.ACK,
        ["E305"],
        "1234",
    ),
    "fioletoven/dc09 message.tests.rs parse_message_test": (Reply.ACK, [], ""),
    "fioletoven/dc09 message.tests.rs parse_nak_test": (Reply.DUH, [], ""),  # a receiver's NAK
    "home-assistant/core#131728": (Reply.ACK, ["R401"], "AAA"),
    "home-assistant/core#88474": (Reply.ACK, ["E602"], "AAA"),
    "locally generated with PyPI my-dc09-spt 0.2.2 dc09_msg": (Reply.ACK, ["E130"], "1234"),
    "locally generated with PyPI my-dc09-spt 0.2.2 dc09poll": (Reply.ACK, [], ""),
    "pysiaalarm case_encrypted_adm": (Reply.DUH, [], ""),  # its key is not published
    "pysiaalarm case_null": (Reply.NAK, [], ""),  # decrypts; its 2020 timestamp is stale
}


def expected(vector: Vector) -> tuple[Reply, list[str], str]:
    matches = [v for k, v in EXPECTED.items() if vector.source.startswith(k)]
    assert len(matches) == 1, vector.source
    return matches[0]


@pytest.mark.parametrize("vector", [v for v in ALL_VECTORS if v.valid], ids=lambda v: v.source)
def test_valid_vectors_are_understood(vector: Vector) -> None:
    reply, codes, panel = expected(vector)
    keys = {"AAAB": PYSIAALARM_TEST_KEY}
    decision = decide(vector.wire(), keys)
    assert decision.reply is reply, decision.reason
    assert [e.code for e in decision.events] == codes
    if codes:
        assert decision.panel == panel
    if reply is not Reply.ACK:
        assert decision.answer is not None


@pytest.mark.parametrize("vector", [v for v in ALL_VECTORS if not v.valid and v is not ELDES])
def test_invalid_vectors_get_no_answer(vector: Vector) -> None:
    decision = decide(vector.wire())
    assert decision.reply is Reply.IGNORED and decision.answer is None


def test_encrypted_null_vector_decrypts_and_is_acked_at_its_own_time() -> None:
    vector = next(v for v in ALL_VECTORS if "case_null" in v.source)
    msg = message.parse(one_frame(vector.wire()).body)
    assert msg is not None and msg.encrypted and msg.id == "NULL" and msg.account == "AAAB"
    content = message.decrypted_content(msg, PYSIAALARM_TEST_KEY)
    assert content == message.Content("", (), datetime(2020, 7, 5, 18, 24, 52, tzinfo=UTC))
    then = datetime(2020, 7, 5, 18, 25, 10, tzinfo=UTC)
    decision = decide(vector.wire(), {"AAAB": PYSIAALARM_TEST_KEY}, then)
    assert decision.reply is Reply.ACK and decision.reason == "link test"
    ack = decision.ack(then)
    assert ack.startswith(b"\n") and b'"*ACK"0000R0L0#AAAB[' in ack


def test_eldes_frame_counting_its_cr_is_accepted() -> None:
    decision = decide(ELDES.wire())
    assert decision.reply is Reply.ACK
    assert [(e.code, e.area, e.zone) for e in decision.events] == [("E900", "00", "001")]


def test_home_assistant_closing_by_user_70() -> None:
    vector = next(v for v in ALL_VECTORS if "131728" in v.source)
    decision = decide(vector.wire())
    assert [(e.code, e.area, e.zone) for e in decision.events] == [("R401", "01", "070")]
    assert receiver.source(decision.message) == "R0L0"  # type: ignore[arg-type]


def test_receiver_and_line_are_hex_numbers() -> None:
    vector = next(v for v in ALL_VECTORS if "to_string_test" in v.source)
    decision = decide(vector.wire())
    assert decision.message is not None
    assert (decision.message.receiver_number, decision.message.line_number) == ("F3", "77")
    assert decision.ack(NOW) == answer.frame(b'"ACK"0001RF3L77#1234[]')


# --- CRC and framing ------------------------------------------------------------------------------


def test_crc16_arc_check_value() -> None:
    assert frame.crc16(b"123456789") == 0xBB3D  # the catalogued check value of CRC-16/ARC


def test_crc_matches_my_dc09_spt() -> None:
    for text in ['"NULL"0000L0#1234[]', '"ADM-CID"0007L0#1234[#1234|1130 01 015]', "x" * 300]:
        assert frame.crc16(text.encode()) == dc09_msg.dc09crc(text)


def test_binary_crc_form_is_accepted() -> None:
    body = b'"ADM-CID"0007L0#1234[#1234|1130 01 015]'
    crc = frame.crc16(body)
    for crc_bytes in (crc.to_bytes(2, "big"), b"\n\r"):  # also a CRC whose bytes are LF CR
        wire = b"\n" + crc_bytes + b"%04X" % len(body) + body + b"\r"
        raw = one_frame(wire)
        assert raw.body == body
        assert raw.valid() is (crc_bytes == crc.to_bytes(2, "big"))


def test_many_frames_in_one_read_and_separators_between_them() -> None:
    one = answer.frame(b'"NULL"0001L0#1234[]')
    two = answer.frame(b'"NULL"0002L0#1234[]')
    frames, junk = frame.split(bytearray(one + b"\r\n\x00 " + two + b"\n"))
    assert junk is None and [f.body[6:10] for f in frames] == [b"0001", b"0002"]


def test_a_frame_split_at_every_byte_boundary_comes_out_whole() -> None:
    wire = (
        dc09_msg("1234", key=KEY, line=0)
        .dc09block(
            42, "SIA-DCS", dc03_msg.dc03event("1234", {"code": "FA", "zone": "7", "area": "2"})
        )
        .encode()
    )
    for cut in range(len(wire) + 1):
        buffer = bytearray()
        got = []
        for part in (wire[:cut], wire[cut:]):
            buffer += part
            frames, junk = frame.split(buffer)
            assert junk is None
            got += frames
        assert len(got) == 1 and got[0].valid() and not buffer


@pytest.mark.parametrize(
    "junk",
    [b"GET / HTTP/1.1\r\n", b'\nZZZZ0012"ACK"', b"hello", b"\n" + b"A" * 30],
)
def test_junk_is_recognised(junk: bytes) -> None:
    _, reason = frame.split(bytearray(junk))
    assert reason is not None


def test_a_frame_without_its_cr_is_cut_off_at_the_size_limit() -> None:
    head = b'\n00000FFF"NULL"0001L0#1234['
    buffer = bytearray(head + b"A" * (frame.MAX_FRAME_BYTES - len(head) - 1))
    assert frame.split(buffer) == ([], None)  # still possible
    buffer += b"AA"
    assert frame.split(buffer)[1] == "frame too long"


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=5))
def test_split_never_fails_and_never_grows(data: bytes, cuts: list[int]) -> None:
    buffer = bytearray()
    for start, end in zip([0, *sorted(cuts)], [*sorted(cuts), len(data)], strict=True):
        buffer += data[start:end]
        frames, junk = frame.split(buffer)
        for raw in frames:
            receiver.decide(raw, {"1234": KEY}.get, NOW)  # never raises
        if junk is not None:
            buffer.clear()
        assert len(buffer) <= frame.MAX_FRAME_BYTES


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["ADM-CID", "SIA-DCS", "NULL", "*ADM-CID", "*SIA-DCS", "*NULL", "X"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
)
def test_decide_never_raises_on_frames_with_a_right_crc(kind: str, rest: str) -> None:
    body = f'"{kind}"0001L0#1234[{rest}'.encode()
    decision = decide(answer.frame(body), {"1234": KEY} if "*" in kind else {})
    assert decision.reply in (Reply.ACK, Reply.DUH, Reply.NAK)


# --- AES --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", crypto.KEY_SIZES)
def test_encryption_round_trip_for_each_key_size(size: int) -> None:
    key = bytes(range(size))
    text = b"#1234|1130 01 015]_12:00:00,03-01-2026"
    plain = crypto.decrypt(key, crypto.encrypt(key, text))
    assert plain is not None and len(plain) % 16 == 0
    pad, bar, rest = plain.partition(b"|")
    assert bar and rest == text and b"[" not in pad and b"]" not in pad


@pytest.mark.parametrize("size", crypto.KEY_SIZES)
def test_encryption_is_aes_cbc_with_a_zero_iv(size: int) -> None:
    key = bytes(range(100, 100 + size))
    for length in range(40):
        text = bytes(range(length))
        hex_text = crypto.encrypt(key, text)
        decryptor = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).decryptor()
        plain = decryptor.update(bytes.fromhex(hex_text.decode())) + decryptor.finalize()
        assert hex_text == hex_text.upper() and plain.partition(b"|")[2] == text
        assert crypto.decrypt(key, hex_text) == plain


def test_decryption_refuses_what_is_not_whole_blocks_of_hex() -> None:
    for hex_text in (b"", b"00" * 15, b"0" * 31 + b"g", b" " * 32, b"00" * 16 + b"0"):
        assert crypto.decrypt(KEY, hex_text) is None
    assert crypto.decrypt(b"", b"00" * 16) is None  # an unusable key


def test_padding_is_letters_and_digits() -> None:
    pad = crypto.padding(10_000)
    assert len(pad) == 10_000 and pad.isalnum() and len(set(pad)) == 62


def test_key_problems() -> None:
    assert key_problem("00" * 16) is None
    assert key_problem("00" * 24) is None
    assert key_problem("00" * 32) is None
    assert key_problem("00" * 15) is not None
    assert key_problem("zz" * 16) is not None
    assert key_problem("") is not None


def spt_frame(seq: int, kind: str, payload: str, key: bytes | None = KEY, offset: int = 0) -> bytes:
    return dc09_msg("1234", key=key, line=0, offset=offset).dc09block(seq, kind, payload).encode()


def test_my_dc09_spt_encrypted_adm_cid_is_acked_encrypted() -> None:
    payload = dc05_msg.dc05event("1234", {"code": "110", "zone": "3", "area": "1", "q": "1"})
    now = datetime.now(UTC)
    decision = decide(spt_frame(5, "ADM-CID", payload), {"1234": KEY}, now)
    assert decision.reply is Reply.ACK
    assert [(e.code, e.area, e.zone) for e in decision.events] == [("E110", "01", "003")]
    ack = decision.ack(now).decode()
    kind, offset = dc09_msg("1234", key=KEY, line=0).dc09answer(5, ack)
    assert kind == "ACK" and abs(offset) < 2  # the transmitter decrypts it and reads our time


@pytest.mark.parametrize(
    ("offset", "reply"),
    [(-39, Reply.ACK), (-41, Reply.NAK), (19, Reply.ACK), (21, Reply.NAK)],
)
def test_encrypted_timestamp_window(offset: int, reply: Reply) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    wire = spt_frame(6, "NULL", "]", offset=offset)
    decision = decide(wire, {"1234": KEY}, now)
    assert decision.reply is reply
    if reply is Reply.NAK:
        assert decision.answer == answer.nak(now)
        kind, told = dc09_msg("1234", line=0).dc09answer(6, decision.answer.decode())
        assert kind == "NAK" and told is not None


def test_an_encrypted_message_without_a_timestamp_gets_duh() -> None:
    """Decrypted with the right key but carrying no timestamp, as a wrong key's noise ending in
    a bare ``]`` reads: an encrypted message carries one."""
    body = b'"*NULL"0009L0#1234[' + crypto.encrypt(KEY, b"]")
    assert decide(answer.frame(body), {"1234": KEY}).reply is Reply.DUH


def test_wrong_keys_get_duh_whatever_their_noise() -> None:
    """The same frame under 1,000 wrong keys: each decrypts to noise, some of it ending in a
    bare ``]``; every one is answered DUH, never NAK."""
    payload = dc05_msg.dc05event("1234", {"code": "130"})
    now = datetime.now(UTC)
    encrypted = spt_frame(7, "ADM-CID", payload)
    for n in range(1000):
        wrong = n.to_bytes(16, "big")
        assert decide(encrypted, {"1234": wrong}, now).reply is Reply.DUH


def test_wrong_key_unknown_key_and_unencrypted_from_a_keyed_account_get_duh() -> None:
    payload = dc05_msg.dc05event("1234", {"code": "130"})
    now = datetime.now(UTC)
    encrypted = spt_frame(7, "ADM-CID", payload)
    assert decide(encrypted, {"1234": bytes(16)}, now).reply is Reply.DUH
    assert decide(encrypted, {}, now).reply is Reply.DUH
    plain = spt_frame(8, "ADM-CID", payload, key=None)
    duh = decide(plain, {"1234": KEY}, now)
    assert duh.reply is Reply.DUH and duh.answer == answer.frame(b'"DUH"0008L0#1234[]')


def test_a_keyed_account_named_only_in_the_data_block_is_refused_unencrypted() -> None:
    body = b'"ADM-CID"0001L0[#1234|1130 01 015]'  # no header account
    assert decide(answer.frame(body), {"1234": KEY}).reply is Reply.DUH
    assert decide(answer.frame(body)).reply is Reply.ACK


def test_an_unusable_key_refuses_the_account_encrypted_or_not() -> None:
    payload = dc05_msg.dc05event("1234", {"code": "130"})
    keys = {"1234": UNUSABLE_KEY}  # the station's secret key could not decrypt it
    assert decide(spt_frame(1, "ADM-CID", payload), keys).reply is Reply.DUH
    assert decide(spt_frame(2, "ADM-CID", payload, key=None), keys).reply is Reply.DUH


def test_unknown_message_type_gets_duh() -> None:
    decision = decide(answer.frame(b'"SIA-XYZ"0001L0#1234[]'))
    assert decision.reply is Reply.DUH


# --- events ---------------------------------------------------------------------------------


def test_every_sia_code_maps_to_a_dc05_event() -> None:
    assert len(events.SIA_CODES) >= 80
    for sia, code in events.SIA_CODES.items():
        assert code[0] in "ER" and code[1:] in EVENTS, sia
    for sia in ("BA", "FA", "PA", "HA", "MA", "OP", "CL", "RP", "AT", "YT", "TA", "GA", "WA"):
        assert sia in events.SIA_CODES


@pytest.mark.parametrize(
    ("data", "found"),
    [
        ("#1234|Nri1/BA015", [("E130", "01", "015")]),
        ("#123456|Nri1CL0^VX FRONTE ^", [("R401", "01", "000")]),  # pysiaalarm #11
        ("#123456|Nri0KR1^TAST. 001 ^", [("R114", "00", "001")]),  # pysiaalarm SIA #42
        ("|Nri1/CL501", [("R401", "01", "501")]),
        ("#1234|NRR|Atest", [("E305", "00", "000")]),
        ("#1234|Nri2/BA01/BA02", [("E130", "02", "001"), ("E130", "02", "002")]),
        ("#1234|Nti12:58/id7/ri3/FA1234", [("E110", "03", "999")]),  # zone over 999: capped
        ("#1234|Nri1/BA015/ZX9", [("E130", "01", "015")]),  # ZX unknown, left out
    ],
)
def test_sia_dcs_events(data: str, found: list[tuple[str, str, str]]) -> None:
    parsed = events.sia_dcs(data)
    assert not isinstance(parsed, str), parsed
    assert [(e.code, e.area, e.zone) for e in parsed.events] == found


def test_sia_dcs_without_a_known_code_is_refused() -> None:
    assert isinstance(events.sia_dcs("#1234|NZX1"), str)
    assert isinstance(events.sia_dcs("#1234|N%%%"), str)


@pytest.mark.parametrize(
    ("data", "code"),
    [("#1234|1130 01 015", "E130"), ("#1234|3130 01 015", "R130"), ("6130 01 015", "P130")],
)
def test_adm_cid_qualifiers(data: str, code: str) -> None:
    parsed = events.adm_cid(data)
    assert not isinstance(parsed, str)
    assert parsed.events[0].code == code


@pytest.mark.parametrize("data", ["#1234|2130 01 015", "#1234|1999 01 015", "#1234|1130 0A 015"])
def test_adm_cid_refusals(data: str) -> None:
    assert isinstance(events.adm_cid(data), str)


def test_my_dc09_spt_sia_dcs_with_text_and_names() -> None:
    payload = dc03_msg.dc03event(
        "1234", {"code": "BA", "zone": "12", "area": "3", "zonename": "HALL", "text": "x"}
    )
    decision = decide(spt_frame(9, "SIA-DCS", payload, key=None))
    assert [(e.code, e.area, e.zone) for e in decision.events] == [("E130", "03", "012")]


def test_accounts_longer_than_a_panel_are_refused() -> None:
    body = b'"ADM-CID"0001L0#12345678901[#12345678901|1130 01 015]'
    assert decide(answer.frame(body)).reply is Reply.DUH


# --- signals --------------------------------------------------------------------------------


def test_signals_and_retry_keys() -> None:
    payload = dc05_msg.dc05event("1234", {"code": "130", "zone": "15", "area": "1"})
    now = datetime.now(UTC)
    first = decide(spt_frame(7, "ADM-CID", payload), {"1234": KEY}, now)
    again = decide(spt_frame(7, "ADM-CID", payload), {"1234": KEY}, now)  # new pad and time
    other = decide(
        spt_frame(7, "ADM-CID", dc05_msg.dc05event("1234", {"code": "110"})), {"1234": KEY}, now
    )
    [sig] = receiver.signals(first, "1234", 1)
    assert (sig.source, sig.destination, sig.token_name) == ("R0L0", "dc09", "(dc09)")
    assert (sig.fields.dnis, sig.fields.panel, sig.fields.code) == ("1234", "1234", "E130")
    assert sig.idempotency_key == receiver.signals(again, "1234", 2)[0].idempotency_key
    assert sig.idempotency_key != receiver.signals(other, "1234", 3)[0].idempotency_key
    assert receiver.signals(first, None, 1)[0].fields.dnis == receiver.UNMAPPED_DNIS


def test_content_timestamps() -> None:
    for _ in range(2):  # the second time from the times kept
        parsed = message.content(b"#1234|1130 01 015][x]_23:59:58,12-31-2026")
        assert parsed == message.Content(
            "#1234|1130 01 015", ("x",), datetime(2026, 12, 31, 23, 59, 58, tzinfo=UTC)
        )
        assert message.content(b"#1234|1130 01 015]_12:00:00,02-30-2026") is None
        assert message.content(b"#1234|1130 01 015]_24:00:00,02-28-2026") is None


def test_answers_are_well_formed_frames() -> None:
    msg = message.parse(b'"ADM-CID"0042R1L2#ABC[#ABC|1130 01 015]')
    assert msg is not None
    for wire in (answer.ack(msg, None, NOW), answer.duh(msg), answer.nak(NOW)):
        raw = one_frame(wire)
        assert raw.valid()
    assert answer.ack(msg, None, NOW) == answer.frame(b'"ACK"0042R1L2#ABC[]')
    assert answer.nak(NOW + timedelta(seconds=1)).endswith(b"[]_12:00:01,03-01-2026\r")
