"""Webhooks end to end: a real node (``alarmhub serve``) delivers the outbox's events to a real
local HTTP receiver; signatures checked with the independent ``standardwebhooks`` package;
retries with the same webhook-id, order per account, a node killed between the commit and the
delivery, a receiver that hangs, failed deliveries replayed, three nodes delivering each event once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from standardwebhooks.webhooks import Webhook

from alarmhub.clock import now_us
from alarmhub.core import delivery as rules
from alarmhub.core import events
from alarmhub.store import events as outbox
from alarmhub.store import operations
from alarmhub.store import schema as s
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import open_engine
from tests.support.crashing import alive, wait_gone
from tests.support.database import database_url
from tests.support.processes import (
    Server,
    as_dict,
    as_list,
    cli,
    cli_json,
    provision,
    start_all,
    wait_for,
)
from tests.support.webhook_receiver import ALLOW_PRIVATE, Attempt, Receiver, closed_port

pytestmark = pytest.mark.backends("sqlite", "postgresql")
DELIVERY_DEADLINE_S = 60


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    tmp_path.mkdir(exist_ok=True)
    e = open_engine(database_url(tmp_path))
    yield e
    e.dispose()


@pytest.fixture
def node(tmp_path: Path, engine: Engine) -> Iterator[Server]:
    server = Server(tmp_path, env=dict(ALLOW_PRIVATE)).start()
    yield server
    server.kill()


"""The receivers of these tests are on this machine (127.0.0.1): a private target, allowed."""


def add_webhook(data_dir: Path, url: str, *kinds: str, accounts: str = "") -> tuple[int, str]:
    options = [a for kind in kinds for a in ("--event", kind)]
    more = ["--accounts", accounts] if accounts else []
    added = as_dict(json.loads(cli(data_dir, "webhook", "add", url, *options, *more, "--json",
                                   env=ALLOW_PRIVATE).stdout))  # fmt: skip
    return int(added["id"]), str(added["secret"])


def publish(engine: Engine, account: str, kind: str = events.ALARM_RAISED) -> str:
    """An event committed to the outbox as the station's changes write them (under the incident
    counter's lock); its webhook-id."""

    def work(conn: Any) -> int:
        lock_incidents(conn)
        data = {"account": account, "incident_number": 1, "alarm_id": 1, "type": "BURG",
                "hist_text": "BURGLARY", "priority": "2"}  # fmt: skip
        outbox.publish(conn, kind, account, data, now_us())
        return int(conn.execute(select(s.event.c.event_id).order_by(s.event.c.event_id.desc()))
                   .scalars().first())  # fmt: skip

    return events.event_id_text(operations.run(engine, work))


def stored_body(engine: Engine, webhook_id: str) -> bytes:
    event_id = events.event_id_of(webhook_id)
    with engine.connect() as conn:
        body = conn.execute(select(s.event.c.body).where(s.event.c.event_id == event_id))
        return str(body.scalar_one()).encode()


def verified(secret: str, attempt: Attempt) -> dict[str, Any]:
    return dict(Webhook(secret).verify(attempt.body, attempt.headers))


def deliveries(data_dir: Path, *options: str) -> list[dict[str, Any]]:
    return as_list(cli_json(data_dir, "webhook", "deliveries", *options))


def attempted(data_dir: Path) -> bool:
    return any(d["attempts"] >= 1 for d in deliveries(data_dir))


def test_events_signed_and_filtered(
    tmp_path: Path, engine: Engine, node: Server, receiver: Receiver
) -> None:
    _, secret = add_webhook(tmp_path, receiver.url, events.ALARM_RAISED, accounts="7001")
    wanted = publish(engine, "700101")
    publish(engine, "700201")  # another range
    publish(engine, "700102", events.ALARM_TAKEN)  # another kind
    last = publish(engine, "700103")
    wait_for(lambda: len(receiver.delivered) >= 2, "two deliveries", DELIVERY_DEADLINE_S)
    assert sorted(receiver.delivered_ids()) == sorted([wanted, last])
    first = next(a for a in receiver.delivered if a.headers["webhook-id"] == wanted)
    body = verified(secret, first)
    assert body["type"] == events.ALARM_RAISED and body["data"]["account"] == "700101"
    assert first.body == stored_body(engine, wanted)
    assert first.headers["content-type"] == "application/json"
    assert abs(int(first.headers["webhook-timestamp"]) - first.at) < 60
    shown = wait_for(
        lambda: (d := deliveries(tmp_path)) and all(x["state"] == "delivered" for x in d) and d,
        "deliveries recorded",
    )
    assert [(d["event_id"], d["state"], d["attempts"]) for d in shown] == [
        (last, "delivered", 1), (wanted, "delivered", 1)
    ]  # fmt: skip
    assert secret not in node.log()


def test_a_failing_receiver_gets_the_event_later_with_the_same_id_in_order(
    tmp_path: Path, engine: Engine, node: Server, receiver: Receiver
) -> None:
    receiver.fail_first, receiver.fail_events = 2, 1  # the first event's first two attempts
    _, secret = add_webhook(tmp_path, receiver.url, events.ALARM_RAISED)
    first = publish(engine, "700001")
    wait_for(lambda: len(receiver.attempts) >= 1, "a first attempt", DELIVERY_DEADLINE_S)
    second = publish(engine, "700001")  # waits for the first (the same account)
    other = publish(engine, "700002")  # does not wait
    wait_for(lambda: len(receiver.delivered) >= 3, "three deliveries", DELIVERY_DEADLINE_S)
    tried = [a.headers["webhook-id"] for a in receiver.attempts]
    of_first = [a for a in receiver.attempts if a.headers["webhook-id"] == first]
    assert [a.status for a in of_first] == [500, 500, 204]
    third = receiver.attempts.index(of_first[2])
    assert tried.index(other) < third  # another account went on meanwhile
    assert tried.index(second) > third  # the same account waited for the first
    stamps = [int(a.headers["webhook-timestamp"]) for a in of_first]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]  # each attempt's own time
    for attempt in receiver.attempts:
        verified(secret, attempt)

    def first_delivered() -> dict[str, Any] | None:
        (shown,) = [d for d in deliveries(tmp_path) if d["event_id"] == first]
        return shown if shown["state"] == "delivered" else None

    # recorded a moment after it is sent (the only node records outcomes in batches)
    assert wait_for(first_delivered, "the delivery recorded")["attempts"] == 3


def test_killed_between_commit_and_delivery_delivers_after_restart(
    tmp_path: Path, engine: Engine, node: Server
) -> None:
    port = closed_port()
    down = Receiver(port=port)
    _, secret = add_webhook(tmp_path, down.url, events.ALARM_RAISED)
    sent = publish(engine, "700001")
    wait_for(lambda: attempted(tmp_path), "an attempt", DELIVERY_DEADLINE_S)
    node.kill()  # SIGKILL
    receiver = down.start()
    try:
        restarted = Server(tmp_path, env=dict(ALLOW_PRIVATE)).start()
        try:
            wait_for(lambda: receiver.delivered, "delivered after restart", DELIVERY_DEADLINE_S)
        finally:
            restarted.kill()
        assert receiver.delivered_ids() == [sent]
        verified(secret, receiver.delivered[0])
    finally:
        receiver.stop()


def delivery_pids(server: Server) -> list[int]:
    """The delivery processes this server started, oldest first, from its log."""
    return [int(p) for p in re.findall(r'delivery process started".*?\bpid=(\d+)', server.log())]


def test_the_delivery_process_is_started_again_and_ends_with_its_node(
    tmp_path: Path, engine: Engine, node: Server, receiver: Receiver
) -> None:
    assert delivery_pids(node) == [], "nothing to deliver: no delivery process"
    add_webhook(tmp_path, receiver.url, events.ALARM_RAISED)
    first = publish(engine, "700001")
    wait_for(lambda: receiver.delivered, "delivered", DELIVERY_DEADLINE_S)
    [worker] = delivery_pids(node)
    claimed = lane_claims(engine)  # its claim, if it had not recorded the delivery yet
    os.kill(worker, signal.SIGKILL)
    wait_gone(worker)
    [_, again] = wait_for(lambda: (p := delivery_pids(node)) and len(p) == 2 and p, "a restart")
    # what it claimed is freed once it is found dead: not held until the lease runs out
    assert not claimed & lane_claims(engine)
    second = publish(engine, "700001")
    wait_for(lambda: second in receiver.delivered_ids(), "delivered again", DELIVERY_DEADLINE_S)
    # at least once: the first again too, if the killed process had not recorded it yet
    assert set(receiver.delivered_ids()) == {first, second}
    node.kill()  # SIGKILL: the worker's end of its socket closes
    # it records what ended and frees its claims first (STOP_SECONDS a step), below the node's
    # CPU priority: on a saturated machine that takes it longer than the default wait
    wait_gone(again, 30.0)
    assert not alive(again)


def lane_claims(engine: Engine) -> set[str]:
    """The names under which lanes are claimed now (a shared database; none on SQLite)."""
    with engine.connect() as conn:
        claims = conn.execute(select(s.delivery_lane.c.claimed_by)).scalars()
        return {c for c in claims if c is not None}


def test_failed_delivery_listed_and_replayed(tmp_path: Path, engine: Engine, node: Server) -> None:
    down = Receiver(port=closed_port())
    webhook_id, secret = add_webhook(tmp_path, down.url, events.ALARM_TAKEN)
    sent = publish(engine, "700001", events.ALARM_TAKEN)
    wait_for(lambda: attempted(tmp_path), "an attempt", DELIVERY_DEADLINE_S)
    # 24 hours of retries pass: the next attempt is the last one the schedule allows
    with engine.begin() as conn:
        conn.execute(
            update(s.webhook_delivery).values(attempts=rules.MAX_ATTEMPTS - 1, next_attempt_us=0)
        )
    failed = wait_for(
        lambda: deliveries(tmp_path, "--failed"), "a failed delivery", DELIVERY_DEADLINE_S
    )
    assert [(d["event_id"], d["webhook_id"]) for d in failed] == [(sent, webhook_id)]
    assert failed[0]["last_error"]
    assert "no delivery" not in cli(tmp_path, "webhook", "deliveries", "--failed").stdout
    receiver = down.start()
    try:
        cli(tmp_path, "webhook", "replay", str(failed[0]["delivery_id"]))
        wait_for(lambda: receiver.delivered, "replayed", DELIVERY_DEADLINE_S)
        assert receiver.delivered_ids() == [sent]
        verified(secret, receiver.delivered[0])
        wait_for(lambda: not deliveries(tmp_path, "--failed"), "no failed delivery left")
        again = cli(tmp_path, "webhook", "replay", "999999", check=False)
        assert again.returncode == 1 and "no delivery 999999" in again.stderr
    finally:
        receiver.stop()


def test_a_hanging_receiver_does_not_delay_signals(
    tmp_path: Path, engine: Engine, receiver: Receiver
) -> None:
    token = provision(tmp_path)
    server = Server(tmp_path, env=dict(ALLOW_PRIVATE)).start()
    try:

        def signal_latencies(count: int) -> list[float]:
            taken = []
            for i in range(count):
                body = {"dnis": "1234", "panel": f"{i + 1:04d}", "code": "E130", "area": "01",
                        "zone_or_user": "015"}  # fmt: skip
                started = time.monotonic()
                answer = server_post(server, token, body)
                taken.append(time.monotonic() - started)
                assert answer == 200
            return taken

        calm = signal_latencies(40)
        receiver.hang = True
        add_webhook(tmp_path, receiver.url, events.ALARM_RAISED)
        for n in range(40):
            publish(engine, f"7{n:05d}")
        wait_for(lambda: receiver.arrived, "requests held by the receiver", DELIVERY_DEADLINE_S)
        hanging = signal_latencies(40)
        print(  # a loose sanity check; bench/webhook_delivery.py measures it
            f"signal latency, median: {statistics.median(calm) * 1000:.1f} ms calm, "
            f"{statistics.median(hanging) * 1000:.1f} ms with a hanging receiver"
        )
        assert not receiver.delivered
        assert all(d["state"] == "pending" for d in deliveries(tmp_path))
    finally:
        receiver.stop()
        server.stop()


def server_post(server: Server, token: str, body: dict[str, str]) -> int:
    answer = httpx.post(
        f"{server.url}/rx/site1:rx1/contact_id",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    return answer.status_code


@pytest.mark.long  # three nodes: started first
@pytest.mark.backends("postgresql")
def test_three_nodes_deliver_each_event_once(tmp_path: Path, engine: Engine) -> None:
    """Three nodes of one data directory (they share its secret key) on one database, two
    webhooks with a receiver each: every event reaches each receiver in exactly one attempt,
    counted at the receiver by its webhook-id after every node has stopped (nothing is in flight
    any more), and ``webhook deliveries`` records that one attempt for each."""
    receivers = [Receiver().start() for _ in range(2)]
    nodes = start_all(Server(tmp_path, env=dict(ALLOW_PRIVATE)) for _ in range(3))
    try:
        hooks = {add_webhook(tmp_path, r.url, *events.KINDS)[0]: r for r in receivers}
        sent = [publish(engine, f"70{n % 60:04d}") for n in range(600)]
        for r in receivers:
            wait_for(
                lambda r=r: set(r.delivered_ids()) >= set(sent), "every event", DELIVERY_DEADLINE_S
            )
        wait_for(
            lambda: all(d["state"] == "delivered" for d in deliveries(tmp_path, "--limit", "2000")),
            "every delivery recorded",
        )
    finally:
        for server in nodes:
            server.stop()
        for r in receivers:
            r.stop()
    for r in receivers:
        counts = Counter(a.headers["webhook-id"] for a in r.attempts)  # every attempt, any answer
        assert set(counts) == set(sent)
        assert max(counts.values()) == 1, counts.most_common(3)
    recorded = deliveries(tmp_path, "--limit", "2000")
    assert len(recorded) == len(hooks) * len(sent)
    assert {(d["webhook_id"], d["event_id"]) for d in recorded} == {
        (hook, event) for hook in hooks for event in sent
    }
    assert {(d["state"], d["attempts"]) for d in recorded} == {("delivered", 1)}


def test_cli_refuses_bad_webhooks_and_lists_and_removes(tmp_path: Path, engine: Engine) -> None:
    refused = cli(tmp_path, "webhook", "add", "ftp://x/", "--event", "alarm.raised", check=False)
    assert refused.returncode == 1 and "http:// or https://" in refused.stderr
    unknown = cli(tmp_path, "webhook", "add", "http://x/", "--event", "alarm.boom", check=False)
    assert unknown.returncode == 2
    webhook_id, secret = add_webhook(tmp_path, "https://hooks.example.com/a", events.ALARM_RAISED)
    listed = as_list(cli_json(tmp_path, "webhook", "list"))
    assert [(h["webhook_id"], h["events"]) for h in listed] == [(webhook_id, ["alarm.raised"])]
    assert secret not in cli(tmp_path, "webhook", "list").stdout
    with engine.connect() as conn:
        stored = conn.execute(select(s.webhook.c.secret_encrypted)).scalar_one()
    assert secret not in stored and secret.removeprefix("whsec_") not in stored
    cli(tmp_path, "webhook", "remove", str(webhook_id))
    assert as_list(cli_json(tmp_path, "webhook", "list")) == []
    gone = cli(tmp_path, "webhook", "remove", str(webhook_id), check=False)
    assert gone.returncode == 1 and f"no webhook {webhook_id}" in gone.stderr
