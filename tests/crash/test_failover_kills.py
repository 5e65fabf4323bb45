"""Processes SIGKILLed during the PostgreSQL primary's failover (issue 39): the primary
SIGKILLed under load, then, before the standby is promoted (``tests.support.pg_cluster``; the
nodes on the multi-host URL, two workers each), either a node's writer, one of its workers or
its delivery process (``ah-writer``, ``ah-worker``, ``ah-delivery`` in ``/proc/PID/comm``), or
the whole of one of two nodes under mixed load (HTTP senders and DC-09 panels on both, a
Sur-Gard receiver link), that node started again after the promotion, or the one of two nodes
that holds a ``--connect`` receiver link (the other takes the link over), or one of two nodes'
delivery process with a webhook of every kind to a real receiver (every event delivered).

Shown: every signal answered 200, every DC-09 and receiver frame ACKed, is in the promoted
server, none is routed twice, every answer not 200 is ``503 STORE-1`` (or a connection a killed
process held, closed or refused), the nodes acknowledge again. The seconds from the promotion
to the first 200 (of each node) are printed (docs/reliability.md). Selected with ``-m faults``;
needs the PostgreSQL server binaries. Each test has a cluster of its own: a promotion leaves
one server.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.core import events
from tests.support import pg_cluster
from tests.support import receiver_station as station
from tests.support.cluster_node import (
    Senders,
    cluster_node,
    cluster_nodes,
    stored_keys,
    tally,
)
from tests.support.crashing import kill_node, named
from tests.support.database import db_rows
from tests.support.mixed_load import (
    RECEIVER_FRAMES,
    acknowledging_again,
    more_than_once,
    running,
    tally_mixed,
)
from tests.support.pg_cluster import PgCluster
from tests.support.processes import cli, free_port, wait_for
from tests.support.receiver_sim import ReceiverSim, Settings, TcpServer
from tests.support.webhook_receiver import ALLOW_PRIVATE, Receiver

pytestmark = pg_cluster.MARKS
SENDERS = 4
BEFORE = 150  # signals acknowledged before the faults
AFTER = 150  # ... and after the promotion


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    with PgCluster() as started:
        yield started


SETTINGS = {"store_commit_timeout": "2", "webhook_allow_private": "1"}


def add_webhook(cluster: PgCluster, data_dir: Path) -> None:
    """A webhook of every alarm raised, to a port where nothing listens (its deliveries fail and
    are tried again: the delivery process has work throughout)."""
    env = {"ALARMHUB_DATABASE_URL": cluster.url(), "ALARMHUB_WEBHOOK_ALLOW_PRIVATE": "1"}
    url = f"http://127.0.0.1:{free_port()}/hook"
    cli(data_dir, "webhook", "add", url, "--event", events.ALARM_RAISED, env=env)


@pytest.mark.parametrize("child", ["ah-writer", "ah-worker", "ah-delivery"])
def test_a_child_killed_during_the_failover_loses_nothing_acknowledged(
    cluster: PgCluster, tmp_path: Path, child: str
) -> None:
    with (
        cluster_node(cluster, tmp_path, workers=2, **SETTINGS) as (node, token),
        Senders(node, token, SENDERS) as senders,
    ):
        if child == "ah-delivery":  # started once there is something to deliver
            add_webhook(cluster, tmp_path)
        wait_for(lambda: len(senders.acknowledged) >= BEFORE, "load under way", 60)
        before = wait_for(lambda: named(node, child), f"the node's {child}", 30)
        faulted_at = time.monotonic()
        cluster.kill_primary()
        os.kill(before[0], signal.SIGKILL)
        promoted_at = cluster.promote()
        acked_at_promotion = len(senders.acknowledged)
        first = wait_for(lambda: senders.first_ack_after(promoted_at), "a 200 again", 60)
        wait_for(
            lambda: len(senders.acknowledged) >= acked_at_promotion + AFTER, "load goes on", 60
        )
        again = wait_for(
            lambda: [pid for pid in named(node, child) if pid not in before],
            f"a new {child}",
            60,
        )
        senders.stop.set()
    counted = tally(senders, cluster)
    print(
        f"\nprimary and {child} killed: {counted.summary()}; fault to promotion "
        f"{promoted_at - faulted_at:.2f} s, promotion to the first 200 "
        f"{first - promoted_at:.2f} s; {child} {before[0]} started again as {again[0]}; "
        f"{counted.refusals()}"
    )
    counted.assert_nothing_lost()
    assert {code for status, code in counted.refused if status is not None} <= {"STORE-1"}


NODE_SENDERS = 2  # HTTP senders a node, in the test of a whole node
NODE_BEFORE = 50  # signals acknowledged by each node before the faults
NODE_AFTER = 50  # ... and by each node after node 1 started again
PANELS = 2  # DC-09 accounts: one on each node, each turning to the other when its own is down
MIXED = {**SETTINGS, "runaway_limit": "1000000"}  # panels send on and on


def test_a_whole_node_killed_during_the_failover_loses_nothing_acknowledged(
    cluster: PgCluster, tmp_path: Path
) -> None:
    listen = free_port()
    dc09_ports = [free_port(), free_port()]
    provisioned = station.listen_link(tmp_path, listen)
    with (
        cluster_nodes(
            cluster, tmp_path, 2, dc09_ports, workers=2, provisioned=provisioned, **MIXED
        ) as (nodes, token),
        running(nodes, token, NODE_SENDERS, dc09_ports, PANELS, listen) as (http, panels, sim),
    ):
        wait_for(
            lambda: (
                all(len(s.acknowledged) >= NODE_BEFORE for s in http)
                and len({a for a, _ in panels.acked}) == PANELS
                and sim.acked()
            ),
            "load under way on every interface and node",
            90,
        )
        faulted_at = time.monotonic()
        cluster.kill_primary()
        kill_node(nodes[0])
        promoted_at = cluster.promote()
        node2_first = wait_for(
            lambda: http[1].first_ack_after(promoted_at), "node 2: a 200 again", 60
        )
        restarted_at = time.monotonic()
        nodes[0].start(timeout=120)
        node1_first = wait_for(
            lambda: http[0].first_ack_after(restarted_at), "node 1: a 200 again", 60
        )
        acked_then = [len(s.acknowledged) for s in http]
        restarted_perf = time.perf_counter()
        wait_for(
            lambda: all(
                len(s.acknowledged) >= n + NODE_AFTER for s, n in zip(http, acked_then, strict=True)
            ),
            "both nodes acknowledge on",
            60,
        )
        acknowledging_again(panels, sim, restarted_at, restarted_perf, "after the restart")
    counted = tally_mixed(cluster, tmp_path, http, panels, sim)
    print(
        f"\nthe primary and the whole of node 1 killed, two nodes: fault to promotion "
        f"{promoted_at - faulted_at:.2f} s; promotion to node 2's first 200 "
        f"{node2_first - promoted_at:.2f} s, to node 1's first 200 after its restart "
        f"{node1_first - promoted_at:.2f} s (its start took {node1_first - restarted_at:.2f} s)"
        f"\n{counted.summary(f' ({NODE_SENDERS} senders a node)', f' ({PANELS} panels)')}"
    )
    counted.assert_nothing_lost()


LINK_BEFORE = 150  # frames ACKed over the connect link before the faults
LINK_AFTER = 150  # ... and by the other node after the promotion


def test_a_connect_links_holder_killed_during_the_failover_moves_the_link(
    cluster: PgCluster, tmp_path: Path
) -> None:
    """A ``--connect`` receiver link (a Sur-Gard MLR2 that listens, alarmhub connects) held by
    one of two nodes: the primary and that node killed, the standby promoted; the other node
    takes the link over (its lease, written on the old primary and replicated, runs out) and
    every frame ACKed before, during and after is in the promoted server."""
    receiver = TcpServer()

    def provisioned(env: dict[str, str]) -> None:
        station.provision(tmp_path, env)
        station.add_link(tmp_path, "mlr2", "--connect", f"127.0.0.1:{receiver.port}", env=env)

    sim = ReceiverSim(receiver, Settings(link_test_every=0))
    try:
        with cluster_nodes(cluster, tmp_path, 2, provisioned=provisioned, **MIXED) as (nodes, _):
            sim.start().send(station.event(n) for n in range(RECEIVER_FRAMES))
            wait_for(lambda: len(sim.acked()) >= LINK_BEFORE, "ACKs before the faults", 90)
            held = wait_for(lambda: station.holder(nodes, receiver.port), "the link's holder")
            faulted_at = time.monotonic()
            cluster.kill_primary()
            kill_node(held)
            promoted_at = cluster.promote()
            promoted_perf = time.perf_counter()
            at_promotion = len(sim.acked())
            survivor = wait_for(
                lambda: station.holder(nodes, receiver.port), "the other node connects", 60
            )
            assert survivor is not held
            wait_for(
                lambda: len(sim.acked()) >= at_promotion + LINK_AFTER,
                "ACKs from the other node",
                60,
            )
            first = min(d.acked_at for d in sim.events() if (d.acked_at or 0) > promoted_perf)
            sim.stop()
    finally:
        sim.stop()
        receiver.shut()
    lost = station.lost(sim, tmp_path, url=cluster.direct())
    twice = more_than_once(station.history(tmp_path, url=cluster.direct()))
    print(
        f"\nthe primary and the connect link's holder killed, two nodes: fault to promotion "
        f"{promoted_at - faulted_at:.2f} s; promotion to the other node's first ACK "
        f"{first - promoted_perf:.2f} s; receiver link (MLR2, --connect): acknowledged "
        f"{len(sim.acked())}, missing {len(lost)}, stored twice {twice}, NAKs "
        f"{sum(d.naks for d in sim.events())}, connections {receiver.accepted}"
    )
    assert not lost, f"receiver ACKed, not stored: {lost[:10]}"


PANELS_OF_ALARMS = 50  # accounts 1000-1049: the senders' panels (cluster_node.signal_body)
DELIVERED_BEFORE = 150  # events delivered before the faults
DELIVERED_AFTER = 150  # ... and after the promotion


def test_every_event_is_delivered_after_a_delivery_process_killed_during_the_failover(
    cluster: PgCluster, tmp_path: Path
) -> None:
    """Two nodes, a webhook of every kind to a real receiver, HTTP senders on both raising an
    alarm with each signal: the primary SIGKILLed, then node 1's delivery process, the standby
    promoted. Every event in the promoted server reaches the receiver (at least once: a
    delivery in flight at the kill may come twice; how many is printed), and every signal
    acknowledged is there."""
    receiver = Receiver().start()

    def provisioned(env: dict[str, str]) -> None:
        rows = "".join(f"{1000 + n},Panel {n}\n" for n in range(PANELS_OF_ALARMS))
        (tmp_path / "accounts.csv").write_text("account,name\n" + rows)
        cli(tmp_path, "dnis", "add", "C1", "--mask", "####", env=env)
        cli(tmp_path, "account", "import", str(tmp_path / "accounts.csv"), env=env)
        kinds = [a for kind in events.KINDS for a in ("--event", kind)]
        cli(tmp_path, "webhook", "add", receiver.url, *kinds, env={**env, **ALLOW_PRIVATE})

    try:
        with (
            cluster_nodes(cluster, tmp_path, 2, workers=2, provisioned=provisioned, **MIXED) as (
                nodes,
                token,
            ),
            Senders(nodes[0], token, NODE_SENDERS, prefix="node1-") as first,
            Senders(nodes[1], token, NODE_SENDERS, prefix="node2-") as second,
        ):
            wait_for(
                lambda: len(receiver.delivered) >= DELIVERED_BEFORE, "deliveries under way", 90
            )
            before = wait_for(lambda: named(nodes[0], "ah-delivery"), "node 1's delivery process")
            faulted_at = time.monotonic()
            cluster.kill_primary()
            os.kill(before[0], signal.SIGKILL)
            promoted_at = cluster.promote()
            promoted_wall = time.time()  # the receiver's clock
            delivered_then = len(receiver.delivered)
            wait_for(
                lambda: len(receiver.delivered) >= delivered_then + DELIVERED_AFTER,
                "deliveries after the promotion",
                60,
            )
            first.stop.set()
            second.stop.set()
            published: set[str] = set()

            def every_event_delivered() -> bool:  # the nodes route what is left meanwhile
                rows = db_rows(tmp_path, "SELECT event_id FROM event", url=cluster.direct())
                published.update(events.event_id_text(int(row["event_id"])) for row in rows)
                return published <= set(receiver.delivered_ids())

            wait_for(every_event_delivered, "every event delivered", 120, every=1.0)
    finally:
        receiver.stop()
    counts = Counter(receiver.delivered_ids())
    first_after = min(a.at for a in receiver.delivered if a.at > promoted_wall) - promoted_wall
    twice = more_than_once(counts)
    acknowledged = set(first.acknowledged) | set(second.acknowledged)
    missing = acknowledged - stored_keys(cluster)
    print(
        f"\nthe primary and node 1's delivery process killed, two nodes: fault to promotion "
        f"{promoted_at - faulted_at:.2f} s, promotion to the next delivery {first_after:.2f} s; "
        f"events {len(published)}, delivered "
        f"{len(set(counts) & published)}, delivered twice {twice}"
        f"; signals acknowledged {len(acknowledged)}, missing {len(missing)}"
    )
    assert published <= set(counts)
    assert not missing, sorted(missing)[:10]
