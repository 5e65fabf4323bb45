"""Hostile DC-09 senders against a real node: a key holder forging another account's events,
a flood of unknown accounts, many frames in one UDP datagram, one host holding every TCP slot,
separator-only connections and a peer that never reads its answers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from my_dc09_spt.msg.dc05_msg import dc05_msg

from alarmhub.core.router import RoutePath, Router, StoredSignal
from alarmhub.core.runaway import RunawayMonitor
from alarmhub.store import queries
from alarmhub.store.engine import open_engine
from tests.support import dc09_panel
from tests.support.database import database_url, db_rows, on_postgres
from tests.support.dc09_panel import (
    KEY,
    KEYED_ACCOUNT,
    Panel,
    kind,
    read_answers,
    signal_count,
    spt,
)
from tests.support.processes import Server, free_port, wait_for
from tests.unit.test_core_router import DNIS, FakeRepository

# the database matters to these attacks: they run on SQLite and on PostgreSQL
# long: the module takes minutes in all under load, so it starts among the first
pytestmark = [pytest.mark.backends("sqlite", "postgresql"), pytest.mark.long]


def _event(account: str, seq: int, code: str = "130", zone: int = 1) -> bytes:
    payload = dc05_msg.dc05event(account, {"code": code, "zone": str(zone), "area": "1"})
    return spt(account).dc09block(seq, "ADM-CID", payload).encode()


def _closed(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``sock`` within ``seconds`` (answers read and dropped)."""
    sock.settimeout(0.5)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except ConnectionError:
            return True
    return False


@pytest.fixture(scope="module")
def node(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Panel, Path]]:
    data_dir = tmp_path_factory.mktemp("dc09-attack")
    dc09_panel.provision(data_dir)
    server, panel = dc09_panel.start(
        data_dir,
        {"ALARMHUB_DC09_IDLE_SECONDS": "2"},
    )
    try:
        yield server, panel, data_dir
    finally:
        assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]


# --- item 2: an encrypted frame names one account -------------------------------------------------


def test_encrypted_frame_naming_another_account_is_duh_and_not_stored(
    node: tuple[Server, Panel, Path],
) -> None:
    _, panel, data_dir = node
    keyed = spt(KEYED_ACCOUNT, key=KEY)  # panel A's key, header account A
    forged = dc05_msg.dc05event("1234", {"code": "110", "zone": "9", "area": "1"})  # names B
    wire = keyed.dc09block(601, "ADM-CID", forged).encode()
    assert f"#{KEYED_ACCOUNT}[".encode() in wire
    before = signal_count(data_dir)
    assert kind(panel.tcp([wire])[0]) == "DUH"
    assert kind(panel.udp(keyed.dc09block(602, "ADM-CID", forged).encode())) == "DUH"
    # the same key for its own account is still accepted, after the forged ones
    own = dc05_msg.dc05event(KEYED_ACCOUNT, {"code": "110", "zone": "9", "area": "1"})
    assert kind(panel.tcp([keyed.dc09block(603, "ADM-CID", own).encode()])[0]) == "*ACK"
    assert signal_count(data_dir) - before == 1
    assert signal_count(data_dir, "panel = '1234' AND zone = '009'") == 0


# --- item 3: UDP, one answer per datagram ---------------------------------------------------------


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_hundred_frame_datagram_gets_one_answer(node: tuple[Server, Panel, Path]) -> None:
    _, panel, data_dir = node
    before = signal_count(data_dir, "panel = '1234'")
    datagram = b"".join(_event("1234", 700 + i, zone=100 + i) for i in range(100))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(datagram, ("127.0.0.1", panel.port))
        first = sock.recvfrom(65536)[0]
        assert kind(first) == "ACK"
        sock.settimeout(2)
        with pytest.raises(TimeoutError):
            sock.recvfrom(65536)  # no second answer
    assert signal_count(data_dir, "panel = '1234'") - before == 1  # the frame answered
    # one frame in one datagram is answered as always
    assert kind(panel.udp(_event("1234", 801, zone=801))) == "ACK"


# --- item 3: TCP, per-address cap, idle separators, back-pressure ---------------------------------


def _connect(port: int, host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def _polled(sock: socket.socket, timeout: float = 5) -> str | None:
    """The answer to a link test on ``sock``; None when the node closed it instead."""
    try:
        sock.sendall(spt().dc09poll().encode())
        answers = read_answers(sock, 1, timeout=timeout)
    except ConnectionError:
        return None
    return kind(answers[0]) if answers else None


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_connections_per_address_are_capped(tmp_path: Path) -> None:
    """The cap is counted by each worker process (docs/deployment.md), so one worker here."""
    port = free_port()
    server = Server(
        tmp_path,
        extra_args=("--dc09-listen", f"127.0.0.1:{port}", "--workers", "1"),
        env={"ALARMHUB_DC09_MAX_CONNECTIONS_PER_ADDRESS": "5"},
    ).start()
    try:
        with contextlib.ExitStack() as stack:
            held = [stack.enter_context(_connect(port)) for _ in range(5)]
            assert [_polled(s) for s in held] == ["ACK"] * 5
            extra = stack.enter_context(_connect(port))
            assert _polled(extra) is None  # the sixth from 127.0.0.1 is closed at once
            assert [_polled(s) for s in held] == ["ACK"] * 5  # the five are still served
            others = [stack.enter_context(_connect(port, "127.0.0.2")) for _ in range(5)]
            assert [_polled(s) for s in others] == ["ACK"] * 5  # another address is not affected
            held.pop().close()
            wait_for(
                lambda: _polled(stack.enter_context(_connect(port))) == "ACK",
                "a slot of 127.0.0.1 free again",
            )
    finally:
        assert server.stop() == 0


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_connection_sending_only_separators_is_closed_when_idle(
    node: tuple[Server, Panel, Path],
) -> None:
    _, panel, _ = node
    with _connect(panel.port) as sock:
        sock.settimeout(0.5)
        closed = False
        deadline = time.monotonic() + 15  # idle limit 2 s here
        while not closed and time.monotonic() < deadline:
            try:
                sock.sendall(b"\r\n \x00\t")
                closed = sock.recv(100) == b""
            except TimeoutError:
                continue
            except ConnectionError:
                closed = True
        assert closed


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_peer_that_never_reads_is_not_read_either(node: tuple[Server, Panel, Path]) -> None:
    _, panel, _ = node
    chunk = spt().dc09poll().encode() * 2000  # link tests: answered at once, nothing stored
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", panel.port))
    sock.settimeout(5)
    sent = 0
    blocked = False
    try:
        while sent < 64 * 1024 * 1024:
            try:
                sock.sendall(chunk)
            except TimeoutError:
                blocked = True  # the node stopped reading: its buffers stay bounded
                break
            except ConnectionError:
                blocked = True  # or, idle that long, closed it: bounded too
                break
            sent += len(chunk)
        assert blocked, f"sent {sent} bytes without the node ever pausing"
        # the node still serves everyone else meanwhile (a generous deadline: the node may
        # first work through the link tests it had read before it paused)
        with _connect(panel.port, "127.0.0.3") as other:
            assert _polled(other, timeout=30) == "ACK"
    finally:
        sock.close()


# --- item 3: the router's rule (pure) ------------------------------------------------------------


def _unknown(repo: FakeRepository, panel: str, code: str, source: str, destination: str) -> int:
    sig = StoredSignal(
        repo.new_incident_number(), source, destination, DNIS, panel, code, "01", "001", 1
    )
    Router(RunawayMonitor(limit=10, minutes=2)).route(repo, sig, 2)
    [event] = repo.events_of(sig.incident_number)
    assert event.path is RoutePath.UNKNOWN and event.panel == panel
    assert event.alarm_id is not None
    return event.alarm_id


def test_unknown_dc09_accounts_of_one_line_join_its_open_alarm() -> None:
    repo = FakeRepository()
    first = _unknown(repo, "901", "E130", "R0L0", "dc09")
    assert [_unknown(repo, f"9{i:02d}", "E130", "R0L0", "dc09") for i in range(50)] == [first] * 50
    assert list(repo.alarms) == [first]
    burglary = repo.alarms[first].priority
    assert _unknown(repo, "902", "E110", "R0L0", "dc09") == first  # a fire joins, and
    assert repo.alarms[first].priority < burglary  # the alarm takes its priority
    other_line = _unknown(repo, "903", "E130", "R0L1", "dc09")
    assert other_line != first  # another line has an alarm of its own
    repo.closed.add(first)  # resolved: the next unknown account of the line raises a new one
    assert _unknown(repo, "904", "E130", "R0L0", "dc09") not in (first, other_line)
    # contact_id keeps one alarm per signal
    raised = {_unknown(repo, f"8{i:02d}", "E130", "site1", "rx1") for i in range(3)}
    assert len(raised) == 3


# --- item 3: a flood of unknown accounts ----------------------------------------------------------


def test_a_thousand_unknown_accounts_are_one_alarm_and_never_supervised(tmp_path: Path) -> None:
    dc09_panel.provision(tmp_path)  # line R0L0 -> dnis 1234, mask 70####
    env = {
        "ALARMHUB_DC09_SUPERVISION_SECONDS": "2",
        "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "0.5",
    }
    ports = [free_port() for _ in range(2 if on_postgres() else 1)]  # two nodes share PostgreSQL
    nodes = [
        Server(tmp_path, extra_args=("--dc09-listen", f"127.0.0.1:{p}"), env=env).start()
        for p in ports
    ]
    try:
        # a provisioned account (1002 -> 701002 exists) is supervised: the control
        assert kind(Panel(ports[0]).udp(spt("1002").dc09poll().encode())) == "ACK"
        frames = [_event(f"9{i:03d}", i + 1) for i in range(1000)]  # 709000.. do not exist
        results: list[list[bytes]] = []

        def send(share: list[bytes], port: int) -> None:
            results.append(Panel(port).tcp(share))

        senders = [
            threading.Thread(target=send, args=(frames[c::4], ports[c % len(ports)]))
            for c in range(4)
        ]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        assert sorted(kind(a) for got in results for a in got) == ["ACK"] * 1000

        def routed() -> int:
            rows = db_rows(
                tmp_path,
                "SELECT count(*) AS n FROM history WHERE pr_checksum = 'UNKNOWN' "
                "AND source = 'R0L0' AND panel LIKE '9%'",
            )
            return int(rows[0]["n"]) if int(rows[0]["n"]) == 1000 else 0

        wait_for(routed, "1,000 history events", seconds=60)
        alarms = db_rows(tmp_path, "SELECT * FROM alarm WHERE path = 'UNKNOWN'")
        assert [(a["source"], a["state"], a["type"]) for a in alarms] == [
            ("R0L0", "pending", "UNKN")
        ]
        alarm_id = alarms[0]["alarm_id"]
        joined = db_rows(tmp_path, "SELECT count(*) AS n FROM history WHERE alarm_id = ?", alarm_id)
        assert joined[0]["n"] == 1000
        # the alarm screen lists every one of its signals
        engine = open_engine(database_url(tmp_path))
        try:
            with engine.connect() as conn:
                detail = queries.alarm_detail(conn, int(alarm_id))
        finally:
            engine.dispose()
        assert sorted(e["panel"] for e in detail["events"]) == sorted(
            f"9{i:03d}" for i in range(1000)
        )

        # the provisioned account fails; several intervals later none of the 1,000 has
        def failures() -> list[str]:
            rows = db_rows(tmp_path, "SELECT hist_text FROM alarm WHERE type = 'COMFL'")
            return [str(r["hist_text"]) for r in rows]

        assert wait_for(failures, "the provisioned account's COMMUNICATION FAILURE", 20) == [
            "COMMUNICATION FAILURE DC09 #1002 R0L0"
        ]
        time.sleep(6)  # three more intervals
        assert failures() == ["COMMUNICATION FAILURE DC09 #1002 R0L0"]
        supervised = db_rows(
            tmp_path, "SELECT account FROM dc09_account WHERE last_message_us IS NOT NULL"
        )
        assert [r["account"] for r in supervised] == ["1002"]
    finally:
        for server in nodes:
            assert server.stop() == 0
            assert "Traceback" not in server.log(), server.log()[-3000:]
