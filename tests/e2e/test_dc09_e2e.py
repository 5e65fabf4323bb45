"""The DC-09 receiver end to end: a real ``alarmhub serve --dc09-listen`` process, frames from
the reference vectors and from the independent transmitter ``my-dc09-spt``, over TCP and UDP,
each checked down to the pending alarm or history event it became."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import string
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from my_dc09_spt.msg.dc03_msg import dc03_msg
from my_dc09_spt.msg.dc05_msg import dc05_msg

from alarmhub.dc09 import answer
from tests.support import dc09_panel
from tests.support.database import db_rows
from tests.support.dc09_panel import KEY, KEYED_ACCOUNT, Panel, kind, signal_count, spt
from tests.support.processes import Server, cli, cli_json, wait_for
from tests.unit.test_dc09_protocol import ALL_VECTORS, ELDES


@dataclass
class Hub:
    server: Server
    panel: Panel
    data_dir: Path

    def history(self, account: str) -> list[dict[str, object]]:
        rows = db_rows(
            self.data_dir,
            "SELECT * FROM history WHERE account_number = ? ORDER BY event_id",
            account,
        )
        return [dict(r) for r in rows]

    def alarms(self, where: str, *params: object) -> list[dict[str, object]]:
        rows = db_rows(self.data_dir, f"SELECT * FROM alarm WHERE {where}", *params)  # noqa: S608
        return [dict(r) for r in rows]

    def event(self, account: str, code: str, zone: str) -> dict[str, object]:
        """The history event of ``code``/``zone`` of ``account``, once routed."""
        return wait_for(
            lambda: next(
                (e for e in self.history(account) if e["code"] == code and e["zone"] == zone),
                None,
            ),
            f"{code} zone {zone} in the history of {account}",
        )


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir = tmp_path_factory.mktemp("dc09")
    dc09_panel.provision(data_dir)
    cli(data_dir, "account", "add", "700AAA", "--name", "Ajax Panel")
    cli(data_dir, "dc09", "key", "set", "AAAB", "--key", b"A".hex() * 16)
    server, panel = dc09_panel.start(data_dir, {"ALARMHUB_DC09_IDLE_SECONDS": "6"})
    try:
        yield Hub(server, panel, data_dir)
    finally:
        assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]


# --- the reference vectors --------------------------------------------------------------------


def test_reference_vectors_over_tcp_and_udp(hub: Hub) -> None:
    valid = [v for v in ALL_VECTORS if v.valid]
    invalid = [v for v in ALL_VECTORS if not v.valid and v is not ELDES]
    before = signal_count(hub.data_dir)
    tcp = hub.panel.tcp([v.wire() for v in valid])
    udp = [hub.panel.udp(v.wire()) for v in valid]
    expected = {
        "case_encrypted_adm": "DUH",  # no key for 123F
        "case_null": "NAK",  # the key is set; its 2020 timestamp is stale
        "parse_nak_test": "DUH",  # a receiver's own NAK
    }
    for vector, by_tcp, by_udp in zip(valid, tcp, udp, strict=True):
        want = next((k for n, k in expected.items() if n in vector.source), "ACK")
        assert kind(by_tcp) == kind(by_udp) == want, vector.source
    nak = next(a for v, a in zip(valid, tcp, strict=True) if "case_null" in v.source)
    assert nak.startswith(b"\n") and b'"NAK"0000R0L0A0[]_' in nak  # the receiver's time
    # the invalid ones get no answer, by UDP or on a TCP connection that stays open
    for vector in invalid:
        assert hub.panel.udp(vector.wire(), timeout=0.5) is None, vector.source
    answers = hub.panel.tcp([v.wire() for v in invalid] + [dc09_panel.spt().dc09poll().encode()])
    assert [kind(a) for a in answers] == ["ACK"]
    assert kind(hub.panel.udp(ELDES.wire())) == "ACK"  # CRC and length count its CR: a quirk
    # stored once each, though each came twice (TCP, then UDP: a retransmission)
    hub.event("701234", "E130", "015")  # my-dc09-spt's burglary
    hub.event("701002", "E602", "001")  # py-sia-dc-07's test report
    hub.event("700AAA", "R401", "070")  # home-assistant#131728: closing by user 70
    hub.event("700AAA", "E602", "000")  # home-assistant#88474: Ajax automatic test
    burglary = hub.alarms("account_number = '701234' AND code = 'E130' AND zone = '015'")
    assert [a["type"] for a in burglary] == ["BURG"]
    # fioletoven's frame names receiver F3 line 77, which is not mapped: UNKNOWN ACCOUNT
    unknown = wait_for(lambda: hub.alarms("source = 'RF3L77'"), "the unmapped line's alarm")
    assert [(a["type"], a["code"], a["panel"], a["dnis"]) for a in unknown] == [
        ("UNKN", "E305", "1234", "0")
    ]
    assert signal_count(hub.data_dir) - before == 6  # 5 valid events + Eldes (a quirk)


# --- my-dc09-spt, plain and encrypted, TCP and UDP ----------------------------------------------


def test_my_dc09_spt_frames_become_the_right_alarms(hub: Hub) -> None:
    plain, keyed = spt("1234"), spt(KEYED_ACCOUNT, key=KEY)
    cases = [
        # (transmitter, sequence, frame, by TCP?, account, code, zone, TYPE)
        (keyed, 101, "ADM-CID", {"code": "110", "zone": "21", "area": "1"}, True, "E110", "FIRE"),
        (keyed, 102, "SIA-DCS", {"code": "PA", "zone": "22", "area": "1"}, False, "E120", "PANIC"),
        (plain, 103, "SIA-DCS", {"code": "MA", "zone": "23", "area": "2"}, True, "E100", "MED"),
        (plain, 104, "ADM-CID", {"code": "130", "zone": "24", "area": "2"}, False, "E130", "BURG"),
        (keyed, 105, "SIA-DCS", {"code": "OP", "user": "25", "area": "1"}, True, "E401", "OPEN"),
    ]
    for transmitter, seq, message_type, params, by_tcp, code, type_ in cases:
        account = transmitter.account
        if message_type == "ADM-CID":
            payload = dc05_msg.dc05event(account, params)
        else:
            payload = dc03_msg.dc03event(account, params)
        wire = transmitter.dc09block(seq, message_type, payload).encode()
        got = hub.panel.tcp([wire])[0] if by_tcp else hub.panel.udp(wire)
        assert got is not None
        verdict, offset = transmitter.dc09answer(seq, got.decode())  # it checks CRC, decrypts
        assert verdict == "ACK"
        if transmitter.key is not None:
            assert kind(got) == "*ACK" and offset is not None and abs(offset) < 5
        zone = params.get("zone", params.get("user", "")).zfill(3)
        event = hub.event(f"70{account}", code, zone)
        assert event["type"] == type_, (code, event)


def test_retransmission_is_acked_again_but_stored_once(hub: Hub) -> None:
    keyed = spt(KEYED_ACCOUNT, key=KEY)
    payload = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "131", "zone": "31", "area": "1"})
    before = signal_count(hub.data_dir)
    # each transmission is encrypted anew: other padding, other timestamp, same message
    wires = [keyed.dc09block(201, "ADM-CID", payload).encode() for _ in range(3)]
    assert len(set(wires)) == 3
    answers = [*hub.panel.tcp(wires[:2]), hub.panel.udp(wires[2])]
    assert [keyed.dc09answer(201, a.decode())[0] for a in answers if a] == ["ACK"] * 3
    assert signal_count(hub.data_dir) - before == 1
    # the same sequence number with another event is a new message, not a retransmission
    other = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "131", "zone": "32", "area": "1"})
    assert kind(hub.panel.tcp([keyed.dc09block(201, "ADM-CID", other).encode()])[0]) == "*ACK"
    assert signal_count(hub.data_dir) - before == 2


def test_bad_crc_unanswered_and_the_connection_goes_on(hub: Hub) -> None:
    good = spt().dc09block(301, "ADM-CID", dc05_msg.dc05event("1234", {"code": "602"})).encode()
    bad = good[:1] + (b"0000" if good[1:5] != b"0000" else b"FFFF") + good[5:]
    assert hub.panel.udp(bad, timeout=1.0) is None
    answers = hub.panel.tcp([bad, spt().dc09poll().encode()])
    assert [(kind(a), a[14:18]) for a in answers] == [("ACK", b"0000")]  # the NULL's only


def test_stale_encrypted_timestamp_is_nacked_with_the_receivers_time(hub: Hub) -> None:
    late = spt(KEYED_ACCOUNT, key=KEY, offset=-120)
    payload = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "110", "zone": "41"})
    before = signal_count(hub.data_dir)
    got = hub.panel.tcp([late.dc09block(401, "ADM-CID", payload).encode()])[0]
    verdict, offset = late.dc09answer(401, got.decode())
    assert verdict == "NAK" and offset is not None and abs(offset) < 5
    assert signal_count(hub.data_dir) == before


def test_keys_refuse_with_duh(hub: Hub) -> None:
    payload = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "110", "zone": "42"})
    wrong = spt(KEYED_ACCOUNT, key=bytes(16)).dc09block(402, "ADM-CID", payload).encode()
    unencrypted = spt(KEYED_ACCOUNT).dc09block(403, "ADM-CID", payload).encode()
    no_key = spt("9876", key=KEY).dc09block(404, "ADM-CID", payload).encode()
    unknown_type = answer.frame(b'"SIA-XYZ"0405L0#1234[]')
    before = signal_count(hub.data_dir)
    answers = hub.panel.tcp([wrong, unencrypted, no_key, unknown_type])
    assert [kind(a) for a in answers] == ["DUH"] * 4
    assert hub.panel.udp(wrong) == answers[0]
    assert signal_count(hub.data_dir) == before


def test_a_key_set_while_running_is_used_at_once(hub: Hub) -> None:
    key = bytes(range(32))  # AES-256
    cli(hub.data_dir, "dc09", "key", "set", "4455", "--key", key.hex())
    transmitter = spt("4455", key=key)
    wire = transmitter.dc09block(501, "SIA-DCS", dc03_msg.dc03event("4455", {"code": "RP"}))

    def acked() -> bool:
        got = hub.panel.udp(wire.encode(), timeout=2)
        return got is not None and transmitter.dc09answer(501, got.decode())[0] == "ACK"

    wait_for(acked, "an ACK with the new key", seconds=5, every=0.2)


# --- connections ------------------------------------------------------------------------------


def test_garbage_and_stalls_close_that_connection_only(hub: Hub) -> None:
    def poll(sock: socket.socket) -> str | None:
        sock.sendall(spt().dc09poll().encode())
        answers = dc09_panel.read_answers(sock, 1)
        return kind(answers[0]) if answers else None

    with socket.create_connection(("127.0.0.1", hub.panel.port)) as good:
        assert poll(good) == "ACK"
        with socket.create_connection(("127.0.0.1", hub.panel.port)) as junk:
            junk.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            junk.settimeout(5)
            assert junk.recv(100) == b""  # closed at once
        assert poll(good) == "ACK"
        with socket.create_connection(("127.0.0.1", hub.panel.port)) as stalled:
            stalled.sendall(spt().dc09poll().encode()[:20])  # and nothing more
            stalled.settimeout(0.5)
            started = time.monotonic()
            closed = False
            while not closed and time.monotonic() - started < 30:
                assert poll(good) == "ACK"  # the good connection is answered all along
                with contextlib.suppress(TimeoutError):
                    closed = stalled.recv(100) == b""
            assert closed  # after the stall limit (6 s here)
        assert poll(good) == "ACK"


def test_a_thousand_connections_with_frames_split_at_every_byte(hub: Hub) -> None:
    connections = 1000
    before = signal_count(hub.data_dir, "panel = '7777'")
    transmitter = spt("7777")
    wires = [
        transmitter.dc09block(
            i + 1,
            "ADM-CID",
            dc05_msg.dc05event(
                "7777", {"code": "130", "zone": str(i % 1000), "area": str(i // 1000)}
            ),
        ).encode()
        for i in range(connections)
    ]

    async def one(i: int, wire: bytes) -> bytes:
        # from eight addresses: at most 200 connections from one (the per-address cap)
        local = (f"127.0.0.{2 + i % 8}", 0)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", hub.panel.port, local_addr=local
        )
        cut = i % (len(wire) + 1)  # every byte boundary, the ends included
        writer.write(wire[:cut])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(wire[cut:])
        await writer.drain()
        got = await asyncio.wait_for(reader.readuntil(b"\r"), 60)
        writer.close()
        return got

    async def everyone() -> list[bytes]:
        return await asyncio.gather(*(one(i, w) for i, w in enumerate(wires)))

    answers = asyncio.run(everyone())
    assert all(kind(a) == "ACK" for a in answers)
    assert len(wires[0]) + 1 < connections
    assert signal_count(hub.data_dir, "panel = '7777'") - before == connections


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda head, body: answer.frame(head + body),
            st.sampled_from([b'"ADM-CID"0001L0#1234[', b'"*SIA-DCS"0002#5678[', b'"NULL"0003[']),
            st.binary(max_size=120),
        ),
        st.text(alphabet=string.printable, max_size=200).map(str.encode),
    )
)
def test_fuzzed_frames_never_crash_the_listener(hub: Hub, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", hub.panel.port), timeout=5) as sock:
        sock.sendall(data)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(data or b"\n", ("127.0.0.1", hub.panel.port))
    poll = spt().dc09block(random.randint(1, 9999), "NULL", "]").encode()
    assert kind(hub.panel.tcp([poll])[0]) == "ACK"  # the listener still answers


# --- provisioning and supervision -------------------------------------------------------------


def test_account_list_shows_last_message_and_state(hub: Hub) -> None:
    hub.panel.tcp([spt("1234").dc09poll().encode()])

    def listed() -> dict[str, object] | None:
        rows = cli_json(hub.data_dir, "dc09", "account", "list")
        assert isinstance(rows, list)
        return next((r for r in rows if r["account"] == "1234" and r["last_message"]), None)

    row = wait_for(listed, "account 1234 listed with its last message", seconds=15)
    assert (row["state"], row["line"], row["encrypted"]) == ("reporting", "R0L0", False)
    assert row["supervision_s"] == 90
    keyed = next(
        r
        for r in cli_json(hub.data_dir, "dc09", "account", "list")
        if r["account"] == KEYED_ACCOUNT
    )  # type: ignore[union-attr]
    assert keyed["encrypted"] is True


def test_communication_failure_and_restoral(tmp_path: Path) -> None:
    dc09_panel.provision(tmp_path)
    cli(tmp_path, "dc09", "account", "interval", "1234", "2")
    server, panel = dc09_panel.start(tmp_path, {"ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "0.5"})
    try:
        assert kind(panel.udp(spt("1234").dc09poll().encode())) == "ACK"

        def failure() -> list[dict[str, object]]:
            rows = db_rows(tmp_path, "SELECT * FROM alarm WHERE type = 'COMFL'")
            return [dict(r) for r in rows]

        [alarm] = wait_for(failure, "COMMUNICATION FAILURE in pending", seconds=15)
        assert alarm["account_number"] == "701234" and alarm["state"] == "pending"
        assert alarm["hist_text"] == "COMMUNICATION FAILURE DC09 #1234 R0L0"
        assert alarm["source"] == "R0L0" and alarm["dnis"] == "1234"
        listed = cli_json(tmp_path, "dc09", "account", "list")
        assert [r["state"] for r in listed] == ["communication failure", "never reported"]  # type: ignore[union-attr]
        # it reports again: the restoral in history, linked to the alarm
        assert kind(panel.tcp([spt("1234").dc09poll().encode()])[0]) == "ACK"

        def restoral() -> list[dict[str, object]]:
            rows = db_rows(
                tmp_path,
                "SELECT * FROM history WHERE hist_text LIKE '%RESTORE' AND type = 'COMFL'",
            )
            return [dict(r) for r in rows]

        [event] = wait_for(restoral, "COMMUNICATION FAILURE RESTORE in history", seconds=15)
        assert event["alarm_id"] == alarm["alarm_id"] and event["account_number"] == "701234"
        # supervision off: no further failure, however long it stays quiet
        cli(tmp_path, "dc09", "account", "interval", "1234", "off")
        assert kind(panel.udp(spt("1234").dc09poll().encode())) == "ACK"
        time.sleep(1.5)  # the node follows the change within a second
        raised = len(failure())
        time.sleep(5)
        assert len(failure()) == raised
        listed = cli_json(tmp_path, "dc09", "account", "list")
        assert [r["state"] for r in listed] == ["not supervised", "never reported"]  # type: ignore[union-attr]
    finally:
        assert server.stop() == 0


def test_an_account_first_heard_is_stored_without_waiting_for_the_flush(tmp_path: Path) -> None:
    """An account's first ACKed message makes it supervised at once in the database, not at
    the next flush (five minutes here): a node killed right after still leaves it supervised,
    and the node started next raises its COMMUNICATION FAILURE."""
    dc09_panel.provision(tmp_path)
    cli(tmp_path, "dc09", "account", "interval", "1234", "60")  # no failure to write meanwhile
    env = {"ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "300"}
    server, panel = dc09_panel.start(tmp_path, env)
    try:
        assert kind(panel.udp(spt("1234").dc09poll().encode())) == "ACK"
        query = "SELECT account FROM dc09_account WHERE last_message_us IS NOT NULL"
        stored = wait_for(lambda: db_rows(tmp_path, query), "the account's row", seconds=5)
        assert [r["account"] for r in stored] == ["1234"]
    finally:
        server.kill()
    cli(tmp_path, "dc09", "account", "interval", "1234", "2")
    server, panel = dc09_panel.start(tmp_path, env)
    try:
        rows = "SELECT account_number FROM alarm WHERE type = 'COMFL'"
        [alarm] = wait_for(lambda: db_rows(tmp_path, rows), "COMMUNICATION FAILURE", seconds=15)
        assert alarm["account_number"] == "701234"
    finally:
        assert server.stop() == 0


def test_a_wrong_secret_key_refuses_keyed_accounts_only(tmp_path: Path) -> None:
    from cryptography.fernet import Fernet

    dc09_panel.provision(tmp_path)  # the keyed account's key under the data dir's secret key
    other_key = Fernet.generate_key().decode()
    server, panel = dc09_panel.start(tmp_path, {"ALARMHUB_SECRET_KEY": other_key})
    try:
        keyed = spt(KEYED_ACCOUNT, key=KEY).dc09poll().encode()
        assert kind(panel.udp(keyed)) == "DUH"
        assert kind(panel.udp(spt(KEYED_ACCOUNT).dc09poll().encode())) == "DUH"
        assert kind(panel.udp(spt("1234").dc09poll().encode())) == "ACK"
        assert "dc09 key unusable" in server.log()
    finally:
        assert server.stop() == 0


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    cases = [
        (("dc09", "line", "add", "--receiver", "G", "--line", "0", "--dnis", "1"), "receiver"),
        (("dc09", "line", "add", "--receiver", "0", "--line", "0", "--dnis", "000"), "dnis"),
        (("dc09", "key", "set", "1234", "--key", "ABC"), "key"),
        (("dc09", "key", "remove", "1234"), "has no key"),
        (("dc09", "account", "interval", "1234", "soon"), "interval"),
    ]
    for args, word in cases:
        result = cli(tmp_path, *args, check=False)
        assert result.returncode == 1, args
        assert result.stderr.startswith("error: ") and word in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    added = cli_json(
        tmp_path, "dc09", "line", "add", "--receiver", "0f", "--line", "007", "--dnis", "12"
    )
    assert added == {"receiver": "F", "line": "7", "dnis": "12"}
    again = cli(
        tmp_path,
        "dc09",
        "line",
        "add",
        "--receiver",
        "F",
        "--line",
        "7",
        "--dnis",
        "13",
        check=False,
    )
    assert again.returncode == 1 and "already mapped" in again.stderr
    assert json.loads(cli(tmp_path, "dc09", "line", "list", "--json").stdout) == [
        {"receiver": "F", "line": "7", "dnis": "12"}
    ]
