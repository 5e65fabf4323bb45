"""The PostgreSQL primary lost under load, its synchronous standby promoted (``pg_ctl promote``,
what Patroni does), a node on the multi-host URL (``tests.support.pg_cluster``).

Three faults: the primary SIGKILLed (the node on the URL's query form), a switchover (the
primary stopped cleanly; the node on libpq's comma form), and the primary SIGKILLed three times
in a row, the old primary made the standby again after each promotion. Shown: every
signal answered 200 is in the promoted server, none is routed twice, and the node acknowledges
again after the promotion by itself. The seconds from the promotion to the first 200 are
printed (docs/reliability.md). Selected with ``-m faults``; needs the PostgreSQL server
binaries. Each test has a cluster of its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import pg_cluster
from tests.support.cluster_node import (
    Senders,
    cluster_node,
    reachable,
    tally,
)
from tests.support.pg_cluster import PgCluster
from tests.support.processes import Server, wait_for

pytestmark = pg_cluster.MARKS
SENDERS = 4
BEFORE = 150  # signals acknowledged before the fault
AFTER = 150  # ... and after the promotion


def leads(node: Server) -> bool:
    """Whether the node holds the lead of supervision (its advisory lock) now."""
    try:
        text = httpx.get(f"{node.url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return False
    return re.search(r"^alarmhub_supervision_leader 1(\.0)?$", text, re.M) is not None


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    with PgCluster() as started:
        yield started


@pytest.mark.parametrize("fault", ["kill", "switchover"])
def test_the_primary_lost_under_load_loses_nothing_acknowledged(
    cluster: PgCluster, tmp_path: Path, fault: str
) -> None:
    comma = fault == "switchover"  # the URL's two forms, one each
    with (
        cluster_node(cluster, tmp_path, comma=comma, store_commit_timeout="2") as (node, token),
        Senders(node, token, SENDERS) as senders,
    ):
        wait_for(lambda: len(senders.acknowledged) >= BEFORE, "load under way", 60)
        wait_for(lambda: leads(node), "the node leads supervision", 30)
        faulted_at = time.monotonic()
        if fault == "kill":
            cluster.kill_primary()
            promoted_at = cluster.promote()
        else:
            promoted_at = cluster.switchover()
        acked_at_promotion = len(senders.acknowledged)
        first = wait_for(lambda: senders.first_ack_after(promoted_at), "a 200 again", 60)
        wait_for(
            lambda: len(senders.acknowledged) >= acked_at_promotion + AFTER, "load goes on", 60
        )
        senders.stop.set()
        # its lock's session died with the old primary: it takes the lead on the new one
        wait_for(lambda: leads(node), "the node leads supervision again", 30)
        lead_again_s = time.monotonic() - promoted_at
    assert reachable(cluster)
    counted = tally(senders, cluster)
    print(
        f"\n{fault}: {counted.summary()}, fault to promotion {promoted_at - faulted_at:.2f} s, "
        f"promotion to the first 200 {first - promoted_at:.2f} s, leads again within "
        f"{lead_again_s:.1f} s, {counted.refusals()}"
    )
    counted.assert_nothing_lost()
    assert {code for status, code in counted.refused if status is not None} <= {"STORE-1"}


FAILOVERS = 3


def test_the_primary_lost_again_and_again_loses_nothing_acknowledged(
    cluster: PgCluster, tmp_path: Path
) -> None:
    """The primary SIGKILLed and its standby promoted, the old primary made the new one's
    synchronous standby again (``PgCluster.rejoin``, Patroni's reinit), FAILOVERS times under
    load: the node follows the primary from one port of its URL to the other and back, acks
    again after each promotion, and every signal answered 200 is in the last primary."""
    with (
        cluster_node(cluster, tmp_path, store_commit_timeout="2") as (node, token),
        Senders(node, token, SENDERS) as senders,
    ):
        wait_for(lambda: len(senders.acknowledged) >= BEFORE, "load under way", 60)
        again: list[float] = []
        for _ in range(FAILOVERS):
            cluster.kill_primary()
            promoted_at = cluster.promote()
            first = wait_for(lambda at=promoted_at: senders.first_ack_after(at), "a 200 again", 60)
            again.append(first - promoted_at)
            cluster.rejoin()  # commits wait for the standby again
            acked = len(senders.acknowledged)
            wait_for(lambda n=acked: len(senders.acknowledged) >= n + AFTER, "load goes on", 60)
        senders.stop.set()
        wait_for(lambda: leads(node), "the node leads supervision on the last primary", 30)
    counted = tally(senders, cluster)
    print(
        f"\n{FAILOVERS} failovers, the old primary rejoining as the standby after each: "
        f"{counted.summary()}, promotion to the first 200 "
        f"{', '.join(f'{s:.2f}' for s in again)} s, {counted.refusals()}"
    )
    counted.assert_nothing_lost()
    assert {code for status, code in counted.refused if status is not None} <= {"STORE-1"}
