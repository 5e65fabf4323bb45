"""Receiver links' durability proven by killing nodes: a simulated Sur-Gard receiver streams
frames stop-and-wait while the node is SIGKILLed; every frame it saw ACKed is in history after
the restart (it resends the one in flight). With two nodes on PostgreSQL, a ``--connect`` link
moves to the survivor when its holder is killed, and no ACKed frame is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import receiver_station as station
from tests.support.crashing import kill_node
from tests.support.database import drop_database, new_database
from tests.support.processes import Server, free_port, start_all, wait_for
from tests.support.receiver_sim import ReceiverSim, Settings, TcpClient, TcpServer

pytestmark = pytest.mark.long

FRAMES = 3_000  # more than are ACKed before the kill and soon after the restart
KILL_AFTER = 150  # ACKs before the kill
AFTER_RESTART = 50  # ACKs after it, then the simulator stops
NO_RUNAWAY = {"ALARMHUB_RUNAWAY_LIMIT": "1000000"}  # one panel sends them all


def test_every_acked_frame_survives_a_sigkill_of_the_node(backend: str, tmp_path: Path) -> None:
    station.provision(tmp_path)
    port = free_port()
    station.add_link(tmp_path, "mlr2", "--listen", f"127.0.0.1:{port}")
    server = Server(tmp_path, env=NO_RUNAWAY).start()
    sim = ReceiverSim(TcpClient("127.0.0.1", port), Settings(link_test_every=0))
    try:
        sim.start().send(station.event(n) for n in range(FRAMES))
        wait_for(lambda: len(sim.acked()) >= KILL_AFTER, "ACKs before the kill", seconds=60)
        kill_node(server)
        at_kill = len(sim.acked())
        server = Server(tmp_path, env=NO_RUNAWAY).start()  # a restart on the same data
        wait_for(lambda: len(sim.acked()) >= at_kill + AFTER_RESTART, "ACKs after the restart", 60)
        sim.stop()
        assert sim.connections >= 2, "the receiver reconnected to the restarted node"
        wait_for(lambda: not station.lost(sim, tmp_path), "every ACKed frame in history", 30)
    finally:
        sim.stop()
        server.kill()


@pytest.fixture
def shared_database() -> Iterator[str]:
    """A migrated database on the PostgreSQL test server for several nodes; dropped after."""
    url = new_database(migrated=True)
    try:
        yield url
    finally:
        drop_database(url)


@pytest.mark.backends("postgresql")  # two nodes need PostgreSQL
def test_a_connect_link_moves_to_the_other_node_when_its_holder_is_killed(
    backend: str, tmp_path: Path, shared_database: str
) -> None:
    env = {"ALARMHUB_DATABASE_URL": shared_database, **NO_RUNAWAY}
    station.provision(tmp_path, env)
    receiver = TcpServer()
    station.add_link(tmp_path, "system5", "--connect", f"127.0.0.1:{receiver.port}", env=env)
    nodes = start_all(Server(tmp_path, env=env) for _ in range(2))
    sim = ReceiverSim(receiver, Settings(link_test_every=0))
    try:
        sim.start().send(station.event(n) for n in range(FRAMES))
        wait_for(lambda: len(sim.acked()) >= KILL_AFTER, "ACKs before the kill", seconds=60)
        held = wait_for(lambda: station.holder(nodes, receiver.port), "the link's holder")
        kill_node(held)
        at_kill = len(sim.acked())
        survivor = wait_for(
            lambda: station.holder(nodes, receiver.port), "the survivor connects", seconds=30
        )
        assert survivor is not held
        wait_for(lambda: len(sim.acked()) >= at_kill + AFTER_RESTART, "ACKs from the survivor", 60)
        sim.stop()
        assert receiver.accepted >= 2
        wait_for(
            lambda: not station.lost(sim, tmp_path, shared_database), "every ACKed frame stored", 30
        )
    finally:
        sim.stop()
        receiver.shut()
        for node in nodes:
            node.kill()
