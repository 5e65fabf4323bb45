"""The soak (``make soak``, not part of ``make test``): two nodes of two workers each on the
multi-host URL of a PostgreSQL primary with a synchronous standby (``tests.support.pg_cluster``),
the primary behind a TCP proxy (``tests.support.tcp_proxy``; the URL names the proxy and the
standby, so ``target_session_attrs=read-write`` finds the primary through the proxy), under
mixed load for ``ALARMHUB_SOAK_SECONDS`` (default 1800): HTTP senders (two a node), DC-09 panels
over TCP (accounts of their own, half of them on each node, each turning to the other node when
its own cannot be reached) and a simulated Sur-Gard MLR2 sending Contact ID frames stop-and-wait
over a ``--listen`` receiver link (the node that holds the port takes it; the other takes it when
that one dies). A fault chosen at random every ``ALARMHUB_SOAK_FAULT_SECONDS`` (default 60):
every database connection cut, the standby stopped for a few seconds (commits wait:
``503 STORE-1``, DC-09 and receiver frames unanswered or NAKed), the primary SIGKILLed and its
standby promoted, the old primary then made the new one's standby again (``PgCluster.rejoin``:
the primary moves between the URL's two entries, so connections are cut through the proxy only
while the primary is the proxied one), a node's writer or one of its workers SIGKILLed, or a
whole node SIGKILLed and started again (``ALARMHUB_SOAK_FAULTS``: the kinds to choose from,
comma-separated, all by default: ``cut``, ``standby``, ``failover``, ``ah-writer``,
``ah-worker``, ``node``).

Afterwards, per interface: acknowledged and acknowledged but missing (must be 0); routed twice
(must be 0), DC-09 frames stored twice (must be 0: the retry window), receiver frames stored
twice (Sur-Gard has no sequence number: a frame committed whose ACK was lost is stored again,
not a loss); the faults made; the resident memory of each process of both nodes (by
``/proc/PID/comm``) at the start and the end, printed. Collected only with
``-o python_files='soak_*.py'`` (what ``make soak`` passes).
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support import pg_cluster
from tests.support import receiver_station as station
from tests.support.cluster_node import cluster_nodes
from tests.support.crashing import kill_node, named
from tests.support.mixed_load import acknowledging_again, running, tally_mixed
from tests.support.pg_cluster import DATABASE, PgCluster
from tests.support.processes import Server, free_port, wait_for
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.skipif(pg_cluster.binaries() is None, reason="no PostgreSQL binaries")
SECONDS = float(os.environ.get("ALARMHUB_SOAK_SECONDS", "1800"))
FAULT_SECONDS = float(os.environ.get("ALARMHUB_SOAK_FAULT_SECONDS", "60"))
NODES = 2
SENDERS = 2  # HTTP senders a node
PANELS = 4  # DC-09 accounts, alternately on each node
STANDBY_DOWN_SECONDS = 5.0
KINDS = "cut,standby,failover,ah-writer,ah-worker,node"
FAULTS = os.environ.get("ALARMHUB_SOAK_FAULTS", KINDS).split(",")
SETTINGS = {"store_commit_timeout": "2", "runaway_limit": "1000000"}  # panels send on and on


class Behind:
    """The cluster with its primary behind ``proxy``: the nodes' URL names the proxy and the
    standby; the test's own connections go to the primary directly."""

    def __init__(self, cluster: PgCluster, proxy: TcpProxy) -> None:
        self.cluster = cluster
        self.proxy = proxy

    def url(self, comma: bool = False) -> str:
        assert self.cluster.standby is not None
        hosts = f"host=127.0.0.1:{self.proxy.port}&host=127.0.0.1:{self.cluster.standby.port}"
        return f"postgresql://postgres@/{DATABASE}?{hosts}&target_session_attrs=read-write"

    def direct(self) -> str:
        """The URL of the primary itself (what the test reads afterwards)."""
        return self.cluster.direct()

    def connect(self) -> psycopg.Connection[Any]:
        return self.cluster.connect()


@pytest.fixture
def behind() -> Iterator[Behind]:
    with PgCluster() as cluster, TcpProxy(("127.0.0.1", cluster.primary.port)) as proxy:
        yield Behind(cluster, proxy)


def memory(nodes: list[Server]) -> dict[str, tuple[int, int]]:
    """The process number and resident memory (KiB) of the nodes' processes, by node and name
    (``node1 ah-worker#2`` for its second one)."""
    found: dict[str, tuple[int, int]] = {}
    for number, node in enumerate(nodes, 1):
        pids = node.pids()
        for pid in pids:
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                comm = "node" if pid == pids[0] else comm  # named as its interpreter
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue  # ended meanwhile
            rss = re.search(r"^VmRSS:\s+(\d+) kB$", status, re.M)
            name, n = f"node{number} {comm}", 1
            while name in found:
                n += 1
                name = f"node{number} {comm}#{n}"
            found[name] = pid, int(rss.group(1)) if rss else 0
    return found


def fault(behind: Behind, nodes: list[Server], kind: str) -> str:
    """Make the fault ``kind`` (on a node chosen at random, for a node's); what was hit."""
    if kind == "cut":
        behind.proxy.cut()
        return "every connection"
    if kind == "standby":
        behind.cluster.stop_standby()
        time.sleep(STANDBY_DOWN_SECONDS)
        behind.cluster.start_standby()
        return "the standby"
    if kind == "failover":
        behind.cluster.kill_primary()
        behind.cluster.promote()
        behind.cluster.rejoin()
        return f"the primary, now on port {behind.cluster.primary.port}"
    number = random.randrange(len(nodes))
    node = nodes[number]
    if kind == "node":
        kill_node(node)
        node.start(timeout=120)
    else:
        pids = wait_for(lambda: named(node, kind), f"node{number + 1}'s {kind}", 60)
        os.kill(random.choice(pids), signal.SIGKILL)
    return f"node{number + 1}"


def sessions(behind: Behind) -> list[tuple[object, ...]]:
    """The primary's client sessions: process, state, what it waits on, since when its
    transaction runs, its query's start (what holds the others up, when nothing commits)."""
    with behind.connect() as conn:
        return conn.execute(
            "SELECT pid, state, wait_event_type, wait_event, xact_start::text, "
            "left(query, 60) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid() ORDER BY xact_start NULLS LAST"
        ).fetchall()


def test_soak(behind: Behind, tmp_path: Path) -> None:
    made: Counter[str] = Counter()
    log: list[tuple[float, str, str]] = []
    listen = free_port()
    dc09_ports = [free_port() for _ in range(NODES)]

    receiver_link = station.listen_link(tmp_path, listen)
    with (
        cluster_nodes(
            behind, tmp_path, NODES, dc09_ports, workers=2, provisioned=receiver_link, **SETTINGS
        ) as (nodes, token),
        running(nodes, token, SENDERS, dc09_ports, PANELS, listen) as (http, panels, sim),
    ):
        wait_for(
            lambda: all(s.acknowledged for s in http) and panels.acked and sim.acked(),
            "load under way on every interface",
            60,
        )
        start = memory(nodes)
        began = time.monotonic()
        while (left := SECONDS - (time.monotonic() - began)) > 0:
            time.sleep(min(FAULT_SECONDS, left))
            if time.monotonic() - began >= SECONDS:
                break
            kind = random.choice(FAULTS)
            at = time.monotonic() - began
            log.append((at, kind, fault(behind, nodes, kind)))
            made[kind] += 1
        # the last fault over, every interface acknowledging again before the end is measured
        settled_at, settled_perf = time.monotonic(), time.perf_counter()
        try:
            for number, senders in enumerate(http, 1):
                wait_for(
                    lambda s=senders: s.first_ack_after(settled_at), f"node{number}: a 200", 60
                )
            acknowledging_again(panels, sim, settled_at, settled_perf, "at the end")
        except AssertionError:
            print(f"\nfaults (seconds from the start, kind, hit): {log}")
            for number, senders in enumerate(http, 1):
                last = [(round(t - began, 2), s, c) for t, s, c in senders.answers[-20:]]
                print(f"node{number}'s last 20 answers (seconds, status, code): {last}")
            print(f"the primary's sessions: {sessions(behind)}")
            raise
        end = memory(nodes)
        elapsed = time.monotonic() - began
    counted = tally_mixed(behind, tmp_path, http, panels, sim)
    print(
        f"\nsoak {elapsed:.0f} s, {NODES} nodes, a fault every {FAULT_SECONDS:.0f} s: "
        f"{dict(made)}\n  faults (seconds from the start, kind, hit): "
        f"{', '.join(f'{t:.0f} {k} {h}' for t, k, h in log)}\n"
        f"{counted.summary(panels=f' ({PANELS} panels)')}"
    )
    print("  resident memory (KiB) at the start and the end:")
    for name in sorted(set(start) | set(end)):
        (pid, first), (last_pid, last) = start.get(name, (0, 0)), end.get(name, (0, 0))
        again = "" if pid == last_pid else " (a process started again since)"
        print(f"    {name}: {first or '-'}, {last or '-'}{again}")
    counted.assert_nothing_lost()
