"""The soak (``make soak``, not part of ``make test``): a node of two workers on a PostgreSQL
primary with a synchronous standby (``tests.support.pg_cluster``), the primary behind a TCP proxy
(``tests.support.tcp_proxy``; the node's multi-host URL names the proxy and the standby, so
``target_session_attrs=read-write`` finds the primary through the proxy), signals sent without
pause for ``ALARMHUB_SOAK_SECONDS`` (default 1800), and a fault chosen at random every
``ALARMHUB_SOAK_FAULT_SECONDS`` (default 60): every connection cut, the standby stopped for a few
seconds (commits wait: ``503 STORE-1``), or the node's writer or one of its workers SIGKILLed.

Afterwards: acknowledged, missing (must be 0), routed twice (must be 0), the faults made, and the
resident memory of each of the node's processes (by ``/proc/PID/comm``) at the start and the
end, printed. Collected only with ``-o python_files='soak_*.py'`` (what ``make soak`` passes).
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
from tests.support.cluster_node import Senders, cluster_node, routed_twice, stored_keys
from tests.support.pg_cluster import DATABASE, PgCluster
from tests.support.processes import Server, wait_for
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.skipif(pg_cluster.binaries() is None, reason="no PostgreSQL binaries")
SECONDS = float(os.environ.get("ALARMHUB_SOAK_SECONDS", "1800"))
FAULT_SECONDS = float(os.environ.get("ALARMHUB_SOAK_FAULT_SECONDS", "60"))
SENDERS = 4
STANDBY_DOWN_SECONDS = 5.0
FAULTS = ["cut", "standby", "ah-writer", "ah-worker"]


class Behind:
    """The cluster with its primary behind ``proxy``: the node's URL names the proxy and the
    standby; the test's own connections go to the primary directly."""

    def __init__(self, cluster: PgCluster, proxy: TcpProxy) -> None:
        self.cluster = cluster
        self.proxy = proxy

    def url(self, comma: bool = False) -> str:
        assert self.cluster.standby is not None
        hosts = f"host=127.0.0.1:{self.proxy.port}&host=127.0.0.1:{self.cluster.standby.port}"
        return f"postgresql://postgres@/{DATABASE}?{hosts}&target_session_attrs=read-write"

    def connect(self) -> psycopg.Connection[Any]:
        return self.cluster.connect()


@pytest.fixture
def behind() -> Iterator[Behind]:
    with PgCluster() as cluster, TcpProxy(("127.0.0.1", cluster.primary.port)) as proxy:
        yield Behind(cluster, proxy)


def memory(node: Server) -> dict[str, int]:
    """Resident memory (KiB) of the node's processes, by name (``name#2`` for a second one)."""
    found: dict[str, int] = {}
    for pid in node.pids():
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # ended meanwhile
        rss = re.search(r"^VmRSS:\s+(\d+) kB$", status, re.M)
        name, n = comm, 1
        while name in found:
            n += 1
            name = f"{comm}#{n}"
        found[name] = int(rss.group(1)) if rss else 0
    return found


def named(node: Server, name: str) -> list[int]:
    pids = []
    for pid in node.pids():
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                pids.append(pid)
        except OSError:
            continue
    return pids


def fault(behind: Behind, node: Server, kind: str) -> None:
    if kind == "cut":
        behind.proxy.cut()
    elif kind == "standby":
        behind.cluster.stop_standby()
        time.sleep(STANDBY_DOWN_SECONDS)
        behind.cluster.start_standby()
    else:
        pids = wait_for(lambda: named(node, kind), f"the node's {kind}", 60)
        os.kill(random.choice(pids), signal.SIGKILL)


def test_soak(behind: Behind, tmp_path: Path) -> None:
    made: Counter[str] = Counter()
    log: list[tuple[float, str]] = []
    with (
        cluster_node(behind, tmp_path, workers=2, store_commit_timeout="2") as (node, token),
        Senders(node, token, SENDERS) as senders,
    ):
        wait_for(lambda: senders.acknowledged, "load under way", 60)
        start = memory(node)
        began = time.monotonic()
        while (left := SECONDS - (time.monotonic() - began)) > 0:
            time.sleep(min(FAULT_SECONDS, left))
            if time.monotonic() - began >= SECONDS:
                break
            kind = random.choice(FAULTS)
            log.append((time.monotonic() - began, kind))
            fault(behind, node, kind)
            made[kind] += 1
        # the last fault's process started again and acknowledging before the end is measured
        settled_at = time.monotonic()
        try:
            wait_for(lambda: senders.first_ack_after(settled_at), "a 200 at the end", 60)
        except AssertionError:
            print(f"\nfaults (seconds from the start, kind): {log}")
            print(
                f"answers (seconds from the start, status, code), the last 40: "
                f"{[(round(t - began, 2), s, c) for t, s, c in senders.answers[-40:]]}"
            )
            raise
        end = memory(node)
        senders.stop.set()
    missing = senders.acknowledged - stored_keys(behind)
    twice = routed_twice(behind)
    refused = Counter((status, code) for _, status, code in senders.answers if status != 200)
    print(
        f"\nsoak {SECONDS:.0f} s, a fault every {FAULT_SECONDS:.0f} s: {dict(made)} "
        f"(seconds from the start: {', '.join(f'{t:.0f} {k}' for t, k in log)}); "
        f"acknowledged {len(senders.acknowledged)}, missing {len(missing)}, routed twice "
        f"{twice}; answers not 200: {dict(refused)}"
    )
    for name in sorted(set(start) | set(end)):
        print(f"  {name}: {start.get(name, '-')} KiB at the start, {end.get(name, '-')} at the end")
    assert not missing, f"acknowledged but not stored: {sorted(missing)[:10]}"
    assert twice == 0, "a signal was routed more than once"
    assert {code for status, code in refused if status is not None} <= {"STORE-1"}
