"""A node's child process SIGKILLed during the PostgreSQL primary's failover (issue 39): the
primary SIGKILLed under load, then the node's writer, one of its workers or its delivery process
(``ah-writer``, ``ah-worker``, ``ah-delivery`` in ``/proc/PID/comm``) SIGKILLed before the
standby is promoted (``tests.support.pg_cluster``; the node on the multi-host URL, two workers).

Shown: every signal answered 200 is in the promoted server, none is routed twice, every answer
not 200 is ``503 STORE-1`` (or the connection a killed worker held, closed), the node starts the
killed process again and acknowledges again by itself. The seconds from the promotion to the
first 200 are printed (docs/reliability.md). Selected with ``-m faults``; needs the PostgreSQL
server binaries. Each test has a cluster of its own: a promotion leaves one server.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.core import events
from tests.support import pg_cluster
from tests.support.cluster_node import Senders, cluster_node, tally
from tests.support.pg_cluster import PgCluster
from tests.support.processes import Server, cli, free_port, wait_for

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


def named(node: Server, name: str) -> list[int]:
    """The node's processes named ``name`` (``/proc/PID/comm``)."""
    found = []
    for pid in node.pids():
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        if comm == name:
            found.append(pid)
    return found


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
