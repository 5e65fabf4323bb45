"""Receiver links end to end: a node in this process, receivers over real TCP sockets (the test
connects to listen links, and is the receiver a connect link connects to), each frame checked
down to the ACK and the alarm it became, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import Connection, select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import system_alarms
from alarmhub.core.account import Account
from alarmhub.core.alarm_types import (
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
    UNKNOWN_ACCOUNT,
)
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.receiver_links import LinkSettings
from alarmhub.core.response import Zone
from alarmhub.core.surgard import contact_id_frame, link_test_frame
from alarmhub.receivers.frames import ACK, NAK
from alarmhub.store import operations, provisioning, queries, receivers, response
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine
from tests.support.database import POSTGRESQL, SQLITE, database_url
from tests.support.in_process import InProcessNode, in_process_node
from tests.support.processes import free_port, wait_for

pytestmark = pytest.mark.backends(SQLITE, POSTGRESQL)
ACCOUNT = "701234"
DNIS = "R1"
FOLLOW_S = 5.0  # a running node follows a provisioning change, and reconnects, within 5 s
EVENT = contact_id_frame(1, 1, "1234", "E130", "01", "015")
LINK_TEST = link_test_frame(1, 1)
FRAMES = {
    "surgard": EVENT,
    "ademco685": b"\n11 1234 18 E130 01 C015\r",
    "d6500": b"a011 123418113001015\x14",
}


@dataclass
class Rx:
    node: InProcessNode
    engine: Engine
    ports: dict[str, int]

    def change(self, work: Callable[[Connection], Any]) -> Any:
        return operations.run(self.engine, work)

    def add_link(self, name: str, protocol: str, transport: str, port: int) -> None:
        link = LinkSettings(name, protocol, transport, f"127.0.0.1:{port}")
        self.change(functools.partial(receivers.add_link, link=link, now_us=now_us()))

    def alarms(self, alarm_type: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.alarm).where(s.alarm.c.type == alarm_type))
            return [dict(row) for row in rows.mappings()]

    def link(self, name: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            return next(x for x in receivers.link_states(conn) if x["name"] == name)


def _add(conn: Connection, links: dict[str, tuple[str, int]]) -> None:
    for name, (protocol, port) in links.items():
        link = LinkSettings(name, protocol, "listen", f"127.0.0.1:{port}")
        receivers.add_link(conn, link, now_us())
        receivers.add_line(conn, name, 1, 1, DNIS, now_us())


@pytest.fixture(scope="module")
def rx(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rx]:
    data_dir = tmp_path_factory.mktemp("receivers")
    engine = open_engine(database_url(data_dir))
    provisioning.add_dnis(engine, DNIS, "70####")
    provisioning.add_account(engine, Account(ACCOUNT, "Oak School", "1 Main St", "Springfield"))
    response.set_zone(engine, Zone(ACCOUNT, "015", "BACK DOOR"))
    ports = {protocol: free_port() for protocol in FRAMES}
    links = {protocol.upper(): (protocol, port) for protocol, port in ports.items()}
    operations.run(engine, functools.partial(_add, links=links))
    with in_process_node(data_dir) as node:
        yield Rx(node, engine, ports)
    engine.dispose()
    log = node.log()
    assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]


def _connect(port: int, seconds: float = FOLLOW_S) -> socket.socket:
    """A connection to a listen link, once it listens."""

    def attempt() -> socket.socket | None:
        with contextlib.suppress(ConnectionRefusedError):
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        return None

    return wait_for(attempt, f"a link listening on port {port}", seconds)


def _exchange(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(frame)
    return sock.recv(16)


def _acked(link: str) -> float:
    labels = {"link": link, "answer": "ack"}
    return REGISTRY.get_sample_value("alarmhub_receiver_frames_total", labels) or 0.0


def test_every_protocol_s_alarm_reaches_pending_with_the_zone_s_description(rx: Rx) -> None:
    acked = _acked("D6500")
    for protocol, port in rx.ports.items():
        with _connect(port) as sock:
            assert _exchange(sock, FRAMES[protocol]) == ACK, protocol

    def routed() -> list[dict[str, Any]]:
        with rx.engine.connect() as conn:
            pending = queries.pending_alarms(conn)
        mine = [a for a in pending if a["account_number"] == ACCOUNT]
        return mine if len(mine) == len(FRAMES) else []

    mine = wait_for(routed, "the three alarms routed")
    assert sorted(a["source"] for a in mine) == ["ADEMCO685 R1L1", "D6500 R1L1", "SURGARD R1L1"]
    assert {a["hist_text"] for a in mine} == {"BURGLARY ZONE 015 BACK DOOR"}
    exposed = rx.node.client.get("/metrics").text
    assert _acked("D6500") - acked == 1
    assert 'alarmhub_receiver_link_up{link="D6500"} 1.0' in exposed


def test_an_unmapped_line_is_an_unknown_account_and_receiver_data_is_kept(rx: Rx) -> None:
    unmapped = contact_id_frame(2, 3, "1234", "E130", "01", "015")
    with _connect(rx.ports["surgard"]) as sock:
        assert _exchange(sock, unmapped) == ACK
        assert _exchange(sock, b"\x01garbage\x14") == ACK
        assert _exchange(sock, b"0011[#0000|NRU0000]\x14") == ACK
    unknown = wait_for(lambda: rx.alarms(UNKNOWN_ACCOUNT.type), "the unknown account's alarm")
    assert [(a["source"], a["dnis"], a["panel"]) for a in unknown] == [
        ("SURGARD R2L3", "0", "1234")
    ]
    (data,) = rx.alarms(RECEIVER_DATA.type)
    assert data["hist_text"] == system_alarms.receiver_data("SURGARD", "\\x01garbage[DC4]")
    (event,) = rx.alarms(RECEIVER_EVENT.type)
    assert event["hist_text"] == system_alarms.receiver_event("SURGARD", "#0000|NRU0000")
    with rx.engine.connect() as conn:
        kept = conn.execute(select(s.receiver_frame.c.kind, s.receiver_frame.c.frame)).all()
    assert sorted(kept) == [("RXDAT", "\\x01garbage[DC4]"), ("RXEVT", "#0000|NRU0000")]
    wait_for(lambda: rx.link("SURGARD")["unreadable"] >= 1, "the link's counts reported")


def test_a_frame_the_store_cannot_take_is_naked(rx: Rx, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_: object) -> None:
        raise StoreUnavailable("writer not running")

    with _connect(rx.ports["surgard"]) as sock:
        monkeypatch.setattr(rx.node.runtime.writer, "enqueue", refuse)
        assert _exchange(sock, EVENT) == NAK
        monkeypatch.undo()
        assert _exchange(sock, EVENT) == ACK


def test_a_silent_link_raises_one_failure_and_its_next_frame_restores_it(rx: Rx) -> None:
    port = free_port()
    rx.add_link("QUIET", "surgard", "listen", port)
    # a timeout shorter than provisioning allows, so that the test is short
    rx.change(
        lambda conn: conn.execute(
            update(s.receiver_link)
            .where(s.receiver_link.c.name == "QUIET")
            .values(heartbeat_timeout_s=1, changed_us=now_us())
        )
    )
    text = f"{RECEIVER_LINK_FAILURE.name} QUIET"
    failures = wait_for(
        lambda: [a for a in rx.alarms(RECEIVER_LINK_FAILURE.type) if a["hist_text"] == text],
        "the link's failure",
        15,
    )
    assert len(failures) == 1
    assert rx.link("QUIET")["state"] == "failed"
    with _connect(port) as sock:
        assert _exchange(sock, LINK_TEST) == ACK

        def restoral() -> int | None:
            # the link stays alive meanwhile (its heartbeat timeout here is 1 s: silent, it
            # would fail again before a supervision turn saw it back)
            assert _exchange(sock, LINK_TEST) == ACK
            with rx.engine.connect() as conn:
                return conn.execute(
                    select(s.history.c.incident_number).where(
                        s.history.c.alarm_id == failures[0]["alarm_id"],
                        s.history.c.hist_text == f"{text} RESTORE",
                    )
                ).scalar()

        restored = wait_for(restoral, "the failure's restoral", every=0.3)
    # one failure until then
    before = [a for a in rx.alarms(RECEIVER_LINK_FAILURE.type) if a["alarm_id"] < restored]
    assert [a["hist_text"] for a in before] == [text]
    rx.change(lambda conn: receivers.remove_link(conn, "QUIET"))


def test_a_connect_link_added_to_a_running_node_connects_and_reconnects(rx: Rx) -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as server:
        server.settimeout(FOLLOW_S + 2)  # the node reads its links every 2 s
        rx.add_link("OUT", "surgard", "connect", port)
        rx.change(lambda conn: receivers.add_line(conn, "OUT", 1, 1, DNIS, now_us()))
        conn, _ = server.accept()
        with conn:
            assert _exchange(conn, LINK_TEST) == ACK
    # the receiver restarts: the link is back within 5 s
    with socket.create_server(("127.0.0.1", port)) as server:
        server.settimeout(FOLLOW_S)
        conn, _ = server.accept()
        with conn:
            assert _exchange(conn, EVENT) == ACK
    wait_for(lambda: rx.link("OUT")["state"] == "up", "the connect link up")
    rx.change(lambda conn: receivers.remove_link(conn, "OUT"))


def test_a_listen_link_added_to_a_running_node_takes_frames(rx: Rx) -> None:
    port = free_port()
    rx.add_link("LATE", "ademco685", "listen", port)
    with _connect(port) as sock:
        assert _exchange(sock, b"\n11 OKAY @ \r") == ACK
    rx.change(lambda conn: receivers.remove_link(conn, "LATE"))
    wait_for(lambda: not _listening(port), "the removed link closed", FOLLOW_S)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return False
    return True
