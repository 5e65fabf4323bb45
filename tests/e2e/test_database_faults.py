"""When the database cannot commit (decisions §14), on a real PostgreSQL primary with a
synchronous standby (``tests.support.pg_cluster``) and a node on its multi-host URL.

Shown: with the standby gone while ``synchronous_standby_names`` waits for it, a signal to a
node of two workers is answered ``503 STORE-1`` (never 200, never left hanging), a DC-09 frame
is answered NAK, and ``/healthz`` answers 503; once the standby is back, ``/healthz``
answers 200, signals 200 and DC-09 frames ACK again, and the database holds every signal
answered 200, each routed once. The console's LISTEN connection works on both forms of the
multi-host URL. Figures of a run: docs/reliability.md. Selected with ``-m faults``; needs the
PostgreSQL server binaries (skipped without them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from my_dc09_spt.msg.dc05_msg import dc05_msg

from alarmhub.console.feed import LiveFeed
from alarmhub.store import queries
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.provisioning import bump_revision
from tests.support import pg_cluster
from tests.support.cluster_node import (
    Senders,
    cluster_node,
    routed_twice,
    signal_body,
    stored_keys,
)
from tests.support.dc09_panel import Panel, kind, spt
from tests.support.pg_cluster import PgCluster
from tests.support.processes import free_port, wait_for

pytestmark = pg_cluster.MARKS
COMMIT_TIMEOUT_S = 2.0
SENDERS = 2
REFUSED = 40  # the senders' signals refused before the standby is started again


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with PgCluster() as started:
        yield started


def test_a_standby_gone_is_answered_store_1_and_nothing_acknowledged_is_lost(
    cluster: PgCluster, tmp_path: Path
) -> None:
    settings = {"store_commit_timeout": str(COMMIT_TIMEOUT_S)}
    panel = Panel(free_port())

    def dc09_event(sequence: int) -> bytes:
        event = dc05_msg.dc05event("1234", {"code": "602"})
        return bytes(spt().dc09block(sequence, "ADM-CID", event).encode())

    with (
        # two workers: the one a check reaches may have no request of its own waiting
        cluster_node(cluster, tmp_path, panel.port, workers=2, **settings) as (node, token),
        httpx.Client(base_url=node.url, timeout=60) as client,  # a hang is seen as one
        Senders(node, token, SENDERS) as senders,  # load beside the checked requests
    ):
        acknowledged: set[str] = set()
        answers: list[tuple[int, str, float]] = []

        def post(key: str, n: int) -> int:
            started = time.monotonic()
            answer = client.post(
                "/rx/site1:rx1/contact_id",
                json=signal_body(n),
                headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
            )
            code = answer.json()["error_code"] if answer.status_code != 200 else ""
            answers.append((answer.status_code, code, time.monotonic() - started))
            if answer.status_code == 200:
                acknowledged.add(key)
            return answer.status_code

        for n in range(5):
            assert post(f"before-{n}", n) == 200
        assert client.get("/healthz").status_code == 200
        assert kind(panel.udp(dc09_event(1))) == "ACK"

        cluster.stop_standby()
        stopped_at = time.monotonic()
        during = len(answers)
        for n in range(6):
            post(f"during-{n}", n)
        health = wait_for(lambda: unhealthy(client), "/healthz 503 while nothing commits", 60)
        # a DC-09 frame is answered NAK (decisions §14): the panel sends it again
        refused_frame = panel.udp(dc09_event(2), timeout=COMMIT_TIMEOUT_S + 3)
        refused = answers[during:]
        print(f"\nstandby gone: answers (status, code, seconds): {refused}")
        assert {(status, code) for status, code, _ in refused} == {(503, "STORE-1")}
        assert health.status_code == 503
        assert health.json()["message"] == "database not committing"
        assert kind(refused_frame) == "NAK", f"a DC-09 frame, nothing committing: {refused_frame!r}"

        wait_for(lambda: senders.refused() >= REFUSED, "the senders refused meanwhile", 60)
        cluster.start_standby()
        back_at = time.monotonic()
        wait_for(lambda: client.get("/healthz").status_code == 200, "healthy again", 60)
        healthy_s = time.monotonic() - back_at
        wait_for(lambda: post(f"after-{len(answers)}", len(answers)) == 200, "200 again", 60)
        first = wait_for(lambda: senders.first_ack_after(back_at), "the senders' 200 again", 60)
        assert kind(panel.udp(dc09_event(3))) == "ACK"
        senders.stop.set()
    codes = [(status, code) for _, status, code in senders.answers if status != 200]
    acknowledged |= senders.acknowledged
    missing = acknowledged - stored_keys(cluster)
    print(
        f"standby down {back_at - stopped_at:.1f} s; /healthz 200 within {healthy_s:.2f} s and "
        f"the senders' first 200 {first - back_at:.2f} s after it was synchronous again; "
        f"acknowledged {len(acknowledged)}, missing {len(missing)}; senders' answers not 200: "
        f"{len(codes)} {sorted(set(codes), key=str)}"
    )
    twice = routed_twice(cluster)
    print(f"routed twice: {twice}")
    assert not missing
    assert {code for status, code in codes if status is not None} <= {"STORE-1"}
    assert twice == 0, "a signal was routed more than once"


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    """A cluster of the test's own (the module's is provisioned by the test before)."""
    with PgCluster() as started:
        yield started


def test_a_standby_gone_longer_than_the_watchdog_bound_keeps_the_writer_and_its_commit(
    own_cluster: PgCluster, tmp_path: Path
) -> None:
    """A commit waiting for the standby past ``store.watchdog.stuck_seconds``: the server is
    working on it, so the writer's watchdog leaves the writer waiting (a silent connection
    would end it); once the standby is back the commit completes, and its signal, answered
    ``503 STORE-1``, is kept (decisions §14)."""
    with (
        cluster_node(own_cluster, tmp_path, workers=2, store_commit_timeout="2") as (node, token),
        httpx.Client(base_url=node.url, timeout=60) as client,
    ):

        def post(key: str) -> int:
            headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}
            body = signal_body(len(key))
            return client.post("/rx/site1:rx1/contact_id", json=body, headers=headers).status_code

        assert post("long-before") == 200
        own_cluster.stop_standby()
        stopped_at = time.monotonic()
        assert post("long-during") == 503  # its commit waits for the standby
        waits = "the server is working on it, the writer waits"
        wait_for(lambda: waits in node.log(), "the watchdog leaves the waiting writer", 90)
        waited_s = time.monotonic() - stopped_at
        assert "writer process ends" not in node.log()
        own_cluster.start_standby()
        wait_for(lambda: post(f"long-after-{time.monotonic()}") == 200, "200 again", 60)
        assert "writer process ends" not in node.log()
    kept = {"long-before", "long-during"} & stored_keys(own_cluster)
    print(f"\nstandby gone {waited_s:.1f} s and more; writer kept; stored: {sorted(kept)}")
    assert kept == {"long-before", "long-during"}


def unhealthy(client: httpx.Client) -> httpx.Response | None:
    """``/healthz``'s answer when it is 503, else None."""
    answer = client.get("/healthz")
    return answer if answer.status_code == 503 else None


@pytest.mark.parametrize("comma", [False, True], ids=["query-form", "comma-form"])
def test_the_console_feed_listens_on_the_multi_host_url(cluster: PgCluster, comma: bool) -> None:
    engine = open_engine(cluster.url(comma=comma))
    upgrade(engine)

    async def scenario() -> tuple[bool, bool]:
        feed = LiveFeed(engine, poll_seconds=3600)  # polling alone would not look for an hour
        feed._run = lambda: asyncio.sleep(3600)  # type: ignore[method-assign]  # no consumer
        await feed.start()
        try:
            try:
                async with asyncio.timeout(30):  # it retries every 2 s when it cannot listen
                    while not feed.listening:
                        await asyncio.sleep(0.01)
            except TimeoutError:
                return False, False
            feed._changed.clear()

            def bump() -> None:
                with write_transaction(engine) as conn:
                    bump_revision(conn, queries.QUEUE)

            await asyncio.to_thread(bump)
            try:
                await asyncio.wait_for(feed._changed.wait(), 30)
            except TimeoutError:
                return False, feed.listening
            return True, feed.listening
        finally:
            await feed.stop()

    try:
        woke, listening = asyncio.run(scenario())
    finally:
        engine.dispose()
    assert woke, "the queue change's notification never reached the feed"
    assert listening
