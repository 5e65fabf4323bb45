"""Hostile peers on a receiver link's listening port, against a real node: a megabyte without a
terminator and a frame dribbled a byte a second, while a receiver on another link of the node
keeps having each frame ACKed at its first try; the node's memory stays bounded and the
oversize frame ends in pending as RECEIVER DATA, cut to FRAME_MAX."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from alarmhub.core.alarm_types import RECEIVER_DATA
from alarmhub.receivers.frames import ACK, FRAME_MAX
from tests.support import receiver_station as station
from tests.support.database import db_rows
from tests.support.processes import Server, free_port, wait_for
from tests.support.receiver_sim import ReceiverSim, Settings, TcpClient

MIB = 1024 * 1024
CHUNK = 64 * 1024
RSS_GROWTH_MAX_KIB = 32 * 1024  # generous: the node holds FRAME_MAX bytes of a frame at most
DRIBBLE_SECONDS = 4  # bytes sent one a second before the rest of the frame


@dataclass
class Node:
    server: Server
    data_dir: Path
    hostile: int  # the listening port of the link the peers attack
    normal: int  # the port of the link a well-behaved receiver sends to


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    data_dir = tmp_path_factory.mktemp("receiver-attack")
    station.provision(data_dir)
    hostile, normal = free_port(), free_port()
    station.add_link(data_dir, "hostile", "--listen", f"127.0.0.1:{hostile}")
    station.add_link(data_dir, "normal", "--listen", f"127.0.0.1:{normal}")
    server = Server(data_dir, env={"ALARMHUB_RUNAWAY_LIMIT": "1000000"}).start()
    try:
        for port in (hostile, normal):
            wait_for(lambda p=port: _listening(p), f"the link on {port} listens", seconds=15)
        yield Node(server, data_dir, hostile, normal)
    finally:
        assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Stream:
    """A well-behaved receiver on the node's other link, sending frames stop-and-wait while an
    attack runs."""

    def __init__(self, node: Node, first: int) -> None:
        self.sim = ReceiverSim(TcpClient("127.0.0.1", node.normal), Settings(link_test_every=0))
        self.sim.start().send(station.event(n) for n in range(first, first + 10_000))

    def __enter__(self) -> ReceiverSim:
        wait_for(lambda: len(self.sim.acked()) >= 10, "the other link's first ACKs")
        return self.sim

    def __exit__(self, *exc: object) -> None:
        self.sim.stop()


def assert_undisturbed(sim: ReceiverSim) -> None:
    """Every frame the receiver sent was ACKed at its first try, within its ACK wait."""
    tried = [d for d in sim.events() if d.sends]
    assert len(tried) >= 20, f"only {len(tried)} frames went during the attack"
    late = [d for d in tried if len(d.sends) > 1 or d.naks]
    assert not late, f"{len(late)} of {len(tried)} frames were resent: {late[:3]}"


def read_answer(sock: socket.socket, seconds: float = 15.0) -> bytes:
    sock.settimeout(seconds)
    try:
        return sock.recv(16)
    except TimeoutError:
        return b""


def test_a_megabyte_without_a_terminator_is_kept_cut_off_as_receiver_data(node: Node) -> None:
    before_kib = node.server.rss_kib()
    with (
        Stream(node, first=0) as sim,
        socket.create_connection(("127.0.0.1", node.hostile)) as peer,
    ):
        for _ in range(MIB // CHUNK):
            peer.sendall(b"7" * CHUNK)
        assert read_answer(peer) == ACK  # the first FRAME_MAX bytes, kept and committed
        time.sleep(1)  # the rest dropped while the other link goes on
    assert_undisturbed(sim)
    grown_kib = node.server.rss_kib() - before_kib
    assert grown_kib < RSS_GROWTH_MAX_KIB, f"the node grew {grown_kib} KiB"
    [kept] = db_rows(
        node.data_dir, "SELECT * FROM receiver_frame WHERE link = 'hostile' AND kind = ?",
        RECEIVER_DATA.type,
    )  # fmt: skip
    assert kept["frame"] == "7" * FRAME_MAX
    alarms = db_rows(node.data_dir, "SELECT * FROM alarm WHERE alarm_id = ?", kept["alarm_id"])
    assert [(a["type"], a["state"]) for a in alarms] == [(RECEIVER_DATA.type, "pending")]


def test_a_frame_dribbled_a_byte_a_second_is_acked_and_stored_whole(node: Node) -> None:
    number = 90_000  # no frame of the other link's stream has it
    frame = station.event(number)
    with (
        Stream(node, first=20_000) as sim,
        socket.create_connection(("127.0.0.1", node.hostile)) as peer,
    ):
        for byte in frame[:DRIBBLE_SECONDS]:
            peer.sendall(bytes([byte]))
            time.sleep(1)
        peer.sendall(frame[DRIBBLE_SECONDS:])
        assert read_answer(peer) == ACK
    assert_undisturbed(sim)
    wait_for(
        lambda: station.history(node.data_dir)[station.identity(number)] == 1,
        "the dribbled frame in history",
    )
