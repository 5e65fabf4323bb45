"""An ``alarmhub serve`` node on a :class:`~tests.support.pg_cluster.PgCluster`'s multi-host URL
(or any :class:`Database`'s), and senders that record every answer, for the database fault
tests: what was acknowledged is then counted against what the database holds."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import httpx
import psycopg

from alarmhub.core.router import SIGNAL_PATHS
from tests.support.database import UNROUTED
from tests.support.processes import Server, cli, start_all, wait_for


class Database(Protocol):
    """What the helpers need of a database: the URL a node uses (a :class:`PgCluster`'s, or a
    proxy's in front of a server) and a connection of the test's own to it."""

    def url(self, comma: bool = False) -> str: ...

    def connect(self) -> psycopg.Connection[Any]: ...


def provision(data_dir: Path, env: dict[str, str]) -> str:
    """Driver rx1 and a token for it, in the database ``env`` names; the token."""
    cli(data_dir, "driver", "add", "rx1", env=env)
    created = cli(data_dir, "token", "create", "--name", "faults", "--driver", "rx1", "--json",
                  env=env)  # fmt: skip
    return str(json.loads(created.stdout)["token"])


@contextmanager
def cluster_node(
    cluster: Database,
    data_dir: Path,
    dc09_port: int | None = None,
    workers: int | None = None,
    comma: bool = False,
    **settings: str,
) -> Iterator[tuple[Server, str]]:
    """A provisioned node on the cluster's multi-host URL (``settings``: more ``ALARMHUB_*``
    variables, by setting name; ``dc09_port``: a DC-09 listener, receiver 0 line 0 on DNIS
    1234; ``workers``: its worker processes, else the suite's; ``comma``: the URL's comma
    form); the node and its token.
    Stopped afterwards (killed if it does not stop)."""
    ports = None if dc09_port is None else [dc09_port]
    with cluster_nodes(cluster, data_dir, 1, ports, workers, comma, **settings) as (nodes, token):
        yield nodes[0], token


@contextmanager
def cluster_nodes(
    cluster: Database,
    data_dir: Path,
    count: int,
    dc09_ports: list[int] | None = None,
    workers: int | None = None,
    comma: bool = False,
    provisioned: Callable[[dict[str, str]], None] | None = None,
    **settings: str,
) -> Iterator[tuple[list[Server], str]]:
    """``count`` nodes on the cluster's multi-host URL, provisioned once, as
    :func:`cluster_node` (``dc09_ports``: one DC-09 listener a node; ``provisioned``: called
    with the nodes' environment once the station is provisioned, before they start: more
    provisioning); the nodes and the token. Stopped afterwards (killed if they do not stop)."""
    env = {"ALARMHUB_DATABASE_URL": cluster.url(comma=comma)}
    env.update({f"ALARMHUB_{name.upper()}": value for name, value in settings.items()})
    token = provision(data_dir, env)
    extra: tuple[str, ...] = () if workers is None else ("--workers", str(workers))
    if dc09_ports is not None:
        cli(data_dir, "dnis", "add", "1234", "--mask", "70####", env=env)
        cli(data_dir, "dc09", "line", "add", "--receiver", "0", "--line", "0", "--dnis", "1234",
            env=env)  # fmt: skip
    if provisioned is not None:
        provisioned(env)
    nodes = start_all(
        Server(data_dir, extra_args=extra + _dc09_listen(dc09_ports, i), env=env)
        for i in range(count)
    )
    try:
        yield nodes, token
    finally:
        for node in nodes:
            try:
                node.stop(timeout=20)
            except Exception:
                node.kill()


def _dc09_listen(ports: list[int] | None, index: int) -> tuple[str, ...]:
    return () if ports is None else ("--dc09-listen", f"127.0.0.1:{ports[index]}")


def signal_body(n: int) -> dict[str, str]:
    """A Contact ID signal (a zone of three digits: long runs go round)."""
    zone = str(1 + n % 999)
    return {"dnis": "C1", "panel": str(1000 + n % 50), "code": "E130", "zone_or_user": zone}


class Senders:
    """``count`` threads posting signals to ``node`` as fast as it answers, each with a new
    Idempotency-Key (``s``, the thread's number, ``-``, the signal's: ``prefix`` before it
    keeps the keys of senders to several nodes apart); every answer recorded (status, error
    code, seconds it took)."""

    def __init__(self, node: Server, token: str, count: int, prefix: str = "") -> None:
        self.node = node
        self.token = token
        self.prefix = prefix
        self.acknowledged: set[str] = set()
        self.answers: list[tuple[float, int | None, str]] = []  # (monotonic time, status, code)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._send, args=(n,), daemon=True) for n in range(count)
        ]

    def __enter__(self) -> Senders:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def first_ack_after(self, moment: float) -> float | None:
        """The monotonic time of the first 200 answered after ``moment``."""
        with self._lock:
            times = [t for t, status, _ in self.answers if status == 200 and t > moment]
        return min(times, default=None)

    def refused(self) -> int:
        """How many signals were answered 503 so far."""
        with self._lock:
            return sum(1 for _, status, _ in self.answers if status == 503)

    def _send(self, number: int) -> None:
        with httpx.Client(base_url=self.node.url, timeout=60) as client:
            i = 0
            while not self.stop.is_set():
                key = f"{self.prefix}s{number}-{i}"
                i += 1
                headers = {"Authorization": f"Bearer {self.token}", "Idempotency-Key": key}
                try:
                    answer = client.post(
                        "/rx/site1:rx1/contact_id", json=signal_body(i), headers=headers
                    )
                    status, code = answer.status_code, _code(answer)
                except httpx.HTTPError as exc:
                    status, code = None, type(exc).__name__
                with self._lock:
                    self.answers.append((time.monotonic(), status, code))
                    if status == 200:
                        self.acknowledged.add(key)
                if status != 200:
                    time.sleep(0.05)


def _code(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("error_code", ""))
    except ValueError:
        return ""


def stored_keys(cluster: Database) -> set[str]:
    """The Idempotency-Keys of every signal the cluster's primary holds."""
    with cluster.connect() as conn:
        rows = conn.execute("SELECT idempotency_key FROM idempotency").fetchall()
    return {str(row[0]) for row in rows}


def routed_twice(cluster: Database) -> int:
    """How many signals were routed more than once, once every signal is routed (waited for)."""
    with cluster.connect() as conn:
        wait_for(lambda: conn.execute(UNROUTED).fetchone() == (0,), "every signal routed", 60)
        row = conn.execute(
            "SELECT count(*) FROM (SELECT incident_number FROM history "
            "WHERE pr_checksum = ANY(%s) GROUP BY incident_number HAVING count(*) > 1) t",
            (list(SIGNAL_PATHS),),
        ).fetchone()
    assert row is not None
    return int(row[0])


class Tally(NamedTuple):
    """What a fault test counts once its load has stopped: the Idempotency-Keys answered 200,
    those of them not stored, the answers that were not 200 (status, code), and the signals
    routed more than once."""

    acknowledged: set[str]
    missing: set[str]
    refused: list[tuple[int | None, str]]
    twice: int

    def summary(self) -> str:
        return (f"acknowledged {len(self.acknowledged)}, missing {len(self.missing)}, routed "
                f"twice {self.twice}")  # fmt: skip

    def refusals(self) -> str:
        return f"answers not 200: {len(self.refused)} ({sorted(set(self.refused), key=str)})"

    def assert_nothing_lost(self) -> None:
        """Every signal acknowledged is stored, and none routed twice."""
        assert not self.missing, f"acknowledged but not stored: {sorted(self.missing)[:10]}"
        assert self.twice == 0, "a signal was routed more than once"


def tally(senders: Senders, cluster: Database) -> Tally:
    """The counts of a run whose senders have stopped, against the cluster's primary."""
    refused = [(status, code) for _, status, code in senders.answers if status != 200]
    missing = senders.acknowledged - stored_keys(cluster)
    return Tally(senders.acknowledged, missing, refused, routed_twice(cluster))


def reachable(cluster: Database) -> bool:
    try:
        with cluster.connect() as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True
