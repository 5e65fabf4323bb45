"""Several nodes on one PostgreSQL database: three ``alarmhub serve`` processes, signals sent
round-robin, the supervision leader SIGKILLed mid-load.

Shown: every acknowledged signal stored once and routed once (the dead node's unrouted ones by
a survivor); supervision taken over by a surviving node (a pair that stopped beating fails, a
pair that beats to the survivors does not); operators on two nodes racing for the same alarms
never take the same one. Runs in the PostgreSQL suite only (``ALARMHUB_TEST_DATABASE_URL``).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from alarmhub.client import QueryClient
from alarmhub.core.alarm_types import SOURCE_FAILURE
from alarmhub.core.router import SIGNAL_PATHS
from alarmhub.store import operators
from alarmhub.store.engine import open_engine
from alarmhub.xm import errors
from tests.support.console_client import Console, queue_rows, read_events
from tests.support.database import UNROUTED, drop_database, new_database
from tests.support.processes import Server, cli, start_all, wait_for

pytestmark = [
    pytest.mark.long,
    pytest.mark.backends("postgresql"),  # several nodes need PostgreSQL
]
TIMEOUT_S = 4  # heartbeat timeout of the test station
RUNAWAY_LIMIT = 10  # signals per account within the window; the load sends 45 per account
ACCOUNTS = 20
OPERATORS = ("OPA", "OPB", "OPC", "OPD")
PASSWORD = "correct-horse-battery"


@pytest.fixture
def database_url() -> Iterator[str]:
    """A new, empty database on the test server, shared by every node; dropped afterwards."""
    url = new_database()
    try:
        yield url
    finally:
        drop_database(url)


def leader_flag(node: Server) -> int | None:
    try:
        metrics = httpx.get(f"{node.url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return None
    found = re.search(r"^alarmhub_supervision_leader (\S+)$", metrics, re.M)
    return int(float(found.group(1))) if found else None


def scalar(engine: Engine, sql: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


class Load:
    """Clients that send signals round-robin to the live nodes, each with its own
    Idempotency-Key; a request that fails is retried on the next node with the same key (what
    a client behind a load balancer does), until one answers 200."""

    def __init__(self, nodes: list[Server], token: str, per_client: int, clients: int) -> None:
        self.nodes = nodes
        self.token = token
        self.per_client = per_client
        self.clients = clients
        self.acknowledged: set[str] = set()
        self.sent = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=300)
            assert not thread.is_alive(), "a load client never finished"

    def _client(self, number: int) -> None:
        targets = itertools.cycle(range(len(self.nodes)))
        with httpx.Client(timeout=10) as client:
            for i in range(self.per_client):
                key = f"c{number}-{i}"
                account = 1 + (number * self.per_client + i) % ACCOUNTS
                body = {
                    "dnis": "C1",
                    "panel": str(account),
                    "code": "E130",
                    "zone_or_user": str(1 + (number * self.per_client + i) // ACCOUNTS),
                }
                while True:
                    node = self.nodes[next(targets)]
                    try:
                        answer = client.post(
                            f"{node.url}/rx/site1:rx1/contact_id",
                            json=body,
                            headers={
                                "Authorization": f"Bearer {self.token}",
                                "Idempotency-Key": key,
                            },
                        )
                    except httpx.HTTPError:
                        continue  # that node is gone: the next one
                    if answer.status_code == 200:
                        with self._lock:
                            self.acknowledged.add(key)
                            self.sent += 1
                        break
                    time.sleep(0.05)


class Beats(threading.Thread):
    """A source beating every ``every`` seconds, round-robin to the nodes it is given."""

    def __init__(self, pair: str, nodes: list[Server], token: str, every: float) -> None:
        super().__init__(daemon=True)
        self.pair, self.nodes, self.token, self.every = pair, nodes, token, every
        self.stopped = threading.Event()
        self.last_ok = 0.0

    def run(self) -> None:
        turns = itertools.count()
        while not self.stopped.is_set():
            nodes = self.nodes
            node = nodes[next(turns) % len(nodes)]
            try:
                answer = httpx.get(
                    f"{node.url}/rx/{self.pair}/hb",
                    headers={"Authorization": f"Bearer {self.token}"},
                    timeout=5,
                )
                if answer.status_code == 200:
                    self.last_ok = time.time()
            except httpx.HTTPError:
                pass
            self.stopped.wait(self.every)


def provision(data_dir: Path, env: dict[str, str], url: str) -> str:
    cli(data_dir, "driver", "add", "rx1", env=env)
    created = cli(
        data_dir,
        "token", "create", "--name", "lb", "--driver", "rx1",
        "--heartbeat", "site1:rx1", "--heartbeat", "quiet:rx1", "--json",
        env=env,
    )  # fmt: skip
    token = str(json.loads(created.stdout)["token"])
    cli(data_dir, "dnis", "add", "C1", "--mask", "70####", env=env)
    for n in range(1, ACCOUNTS + 1):
        cli(data_dir, "account", "add", f"70{n:04d}", "--name", f"Subscriber {n}", env=env)
    engine = open_engine(url)
    for code in OPERATORS:
        operators.add_operator(engine, code, f"Operator {code}", "operator", PASSWORD)
    engine.dispose()
    return token


def test_three_nodes_one_killed_mid_load(tmp_path: Path, database_url: str) -> None:
    env = {
        "ALARMHUB_DATABASE_URL": database_url,
        "ALARMHUB_HEARTBEAT_TIMEOUT": str(TIMEOUT_S),
        "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "1",
        "ALARMHUB_RUNAWAY_LIMIT": str(RUNAWAY_LIMIT),
        "ALARMHUB_RUNAWAY_MINUTES": "10",
    }  # the nodes share the data directory, so its secret key too
    token = provision(tmp_path, env, database_url)
    nodes = start_all(Server(tmp_path, env=env) for _ in range(3))
    engine = open_engine(database_url)
    try:
        leaders = wait_for(
            lambda: [n for n in nodes if leader_flag(n) == 1], "a supervision leader"
        )
        assert len(leaders) == 1, "exactly one node leads supervision"
        leader = leaders[0]
        survivors = [n for n in nodes if n is not leader]
        assert all(leader_flag(n) == 0 for n in survivors)

        beating = Beats("site1:rx1", nodes, token, every=0.5)  # beats to every node, on
        quiet = Beats("quiet:rx1", nodes, token, every=0.5)  # goes quiet at the kill
        beating.start()
        quiet.start()
        load = Load(nodes, token, per_client=150, clients=6)
        load.start()
        wait_for(lambda: load.sent >= 200, "load under way", seconds=60)
        # the quiet pair answered before the kill: a node stores a pair new to it before
        # answering its beat, so the pair stays known even when every beat went to the node
        # killed
        wait_for(lambda: quiet.last_ok > 0, "a beat of the quiet pair answered", seconds=30)
        leader.process.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        leader.process.wait(timeout=30)  # type: ignore[union-attr]
        quiet.stopped.set()
        killed_at = time.time()
        beating.nodes = survivors

        new_leader = wait_for(
            lambda: [n for n in survivors if leader_flag(n) == 1], "a surviving node leads"
        )
        taken_over_s = time.time() - killed_at
        assert len(new_leader) == 1
        load.join()

        # every acknowledged signal stored once (its key remembered with its incident number;
        # a retry on another node answered from the first commit), nothing else stored
        assert len(load.acknowledged) == 6 * 150
        with engine.connect() as conn:
            keys = dict(
                conn.execute(text("SELECT idempotency_key, incident_number FROM idempotency")).all()
            )
            stored = list(conn.execute(text("SELECT incident_number FROM signal")).scalars())
        assert set(keys) == load.acknowledged
        numbers = sorted(keys.values())
        assert len(set(numbers)) == len(numbers)
        assert sorted(stored) == numbers
        # ... and routed once, the dead node's unrouted ones by a survivor
        wait_for(
            lambda: scalar(engine, UNROUTED) == 0,
            "every signal routed",
            seconds=30,
        )
        with engine.connect() as conn:
            routed = conn.execute(
                text(
                    "SELECT incident_number, count(*) FROM history WHERE pr_checksum = ANY(:p) "
                    "GROUP BY incident_number"
                ),
                {"p": list(SIGNAL_PATHS)},
            )
            per_signal = dict(routed.all())
        assert set(per_signal) == set(numbers)
        assert set(per_signal.values()) == {1}, "a signal was routed more than once"
        # the runaway windows count every node's signals: each account raised its first
        # RUNAWAY_LIMIT alarms (own zones), then one RUNAWAY alarm, then history only
        alarms = scalar(engine, "SELECT count(*) FROM alarm WHERE code = 'E130'")
        assert alarms == ACCOUNTS * RUNAWAY_LIMIT
        with engine.connect() as conn:
            runaways = conn.execute(
                text(
                    "SELECT account_number, count(*) FROM alarm WHERE hist_text LIKE 'RUNAWAY %' "
                    "GROUP BY account_number"
                )
            ).all()
        assert sorted(runaways) == [(f"70{n:04d}", 1) for n in range(1, ACCOUNTS + 1)]

        # supervision: the quiet pair fails, the pair beating to the survivors does not
        def failure_of(pair: str) -> Any:
            return scalar(
                engine,
                "SELECT pending_us FROM alarm WHERE hist_text = :t",
                t=f"{SOURCE_FAILURE.name} {pair}",
            )

        raised_us = wait_for(lambda: failure_of("quiet:rx1"), "SOURCE FAILURE of quiet:rx1")
        late_s = raised_us / 1e6 - quiet.last_ok
        assert late_s < TIMEOUT_S + 6, f"SOURCE FAILURE {late_s:.1f} s after the last beat"
        time.sleep(TIMEOUT_S + 2)
        assert failure_of("site1:rx1") is None, "a pair beating to the survivors failed"
        beating.stopped.set()
        print(
            f"\nsupervision taken over {taken_over_s:.1f} s after the kill; SOURCE FAILURE "
            f"{late_s:.1f} s after the last beat (timeout {TIMEOUT_S} s)"
        )

        race_for_alarms(survivors, engine)
    finally:
        engine.dispose()
        for node in nodes:
            node.kill()


def race_for_alarms(nodes: list[Server], engine: Engine) -> None:
    """Operators signed in on two nodes take alarms from their (stale) pending lists and by
    take-next, all at once: no alarm is taken twice."""
    consoles = [
        Console(nodes[i % 2].url).sign_in(code, PASSWORD) for i, code in enumerate(OPERATORS)
    ]
    for console in consoles:
        console.ok("/receiving", {"receiving": False})
    pending = [row["alarm_id"] for row in queue_rows(consoles[0].snapshot(), "pending")]
    assert len(pending) >= 100
    taken: dict[str, list[int]] = {code: [] for code in OPERATORS}

    def operator(console: Console, code: str) -> None:
        mine = pending[:]
        random.Random(code).shuffle(mine)
        for alarm_id in mine[:60]:
            answer = console.post(f"/alarms/{alarm_id}/take")
            if answer.status_code == 200:
                taken[code].append(alarm_id)
            else:
                assert answer.json()["error_code"] == "OPS-TAKEN", answer.text
        for _ in range(20):
            answer = console.post("/take-next")
            assert answer.status_code == 200, answer.text
            if answer.json()["alarm"] is not None:
                taken[code].append(int(answer.json()["alarm"]["alarm_id"]))

    threads = [
        threading.Thread(target=operator, args=(c, code))
        for c, code in zip(consoles, OPERATORS, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    everyone = [alarm_id for ids in taken.values() for alarm_id in ids]
    assert len(everyone) == len(set(everyone)), "an alarm was taken by two operators"
    assert all(taken.values()), "every operator took some"
    with engine.connect() as conn:
        for code, ids in taken.items():
            oprs = conn.execute(
                text("SELECT DISTINCT opr FROM alarm WHERE alarm_id = ANY(:ids)"), {"ids": ids}
            ).scalars()
            assert set(oprs) == {code}
    for console in consoles:
        console.close()


def test_two_nodes_share_nonces_and_live_queues(tmp_path: Path, database_url: str) -> None:
    """A signed query answered by one node cannot be replayed to the other; a signal taken by
    one node reaches a console watching the other node's live feed."""
    env = {"ALARMHUB_DATABASE_URL": database_url}
    token = provision(tmp_path, env, database_url)
    cli(tmp_path, "apiuser", "add", "reports", "--password", "reports-password-1", env=env)
    first, second = start_all(Server(tmp_path, env=env) for _ in range(2))
    try:
        with QueryClient(
            first.url, appkey="app", username="reports", password="reports-password-1"
        ) as client:
            form = {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}
            signed = client.headers(form)
        files = {name: (None, value) for name, value in form.items()}
        params = {"dataSource": "methods", "*view": "xmsubmit"}
        answers = [
            httpx.post(
                f"{node.url}/rest/rest.php", params=params, files=files, headers=signed, timeout=30
            )
            for node in (first, second)
        ]
        assert answers[0].status_code == 200, answers[0].text
        assert answers[1].status_code == 401, "the nonce was replayed to the second node"
        assert answers[1].json() == errors.AUTHENTICATION_FAILED

        console = Console(second.url).sign_in(OPERATORS[0], PASSWORD)
        console.ok("/receiving", {"receiving": False})
        with console.client.stream("GET", "/console/events", timeout=30) as stream:
            events = read_events(stream.iter_lines())
            assert next(events)[0] == "snapshot"
            sent = httpx.post(
                f"{first.url}/rx/site1:rx1/contact_id",
                json={"dnis": "C1", "panel": "7", "code": "E110", "zone_or_user": "9"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )
            assert sent.status_code == 200, sent.text
            seen = None
            for name, data in events:  # the stream's own read timeout bounds the wait
                if name == "snapshot":
                    rows = queue_rows(orjson.loads(data), "pending")
                    seen = next((r for r in rows if r["account_number"] == "700007"), None)
                    if seen is not None:
                        break
            assert seen is not None, "the other node's alarm never reached this console"
            assert (seen["type"], seen["zone"]) == ("FIRE", "009")
        console.close()
    finally:
        for node in (first, second):
            node.stop()
