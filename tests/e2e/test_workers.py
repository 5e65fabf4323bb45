"""A node of several worker processes (``serve --workers 2``): every worker serves, and what
must hold for the whole node holds across them (a nonce used at one worker is refused at the
other, heartbeats reported to either keep a pair alive); a worker SIGKILLed under load is
started again with every acknowledged signal stored; the parent SIGKILLed leaves no process.

Which worker served a request is read from the workers' own metric files (the node's
``/metrics`` sums them all)."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from alarmhub.client import QueryClient
from alarmhub.core.alarm_types import SOURCE_FAILURE
from alarmhub.xm import errors
from tests.crash.test_crash import Load, check_store
from tests.support.crashing import alive, wait_for_writer, wait_gone, writer_pids
from tests.support.database import db_rows
from tests.support.processes import Server, cli, provision, wait_for

WORKERS = ("--workers", "2")
TIMEOUT_S = 4  # heartbeat timeout of the supervision test
USER, PASSWORD = "reports", "reports-password-1"
NO_REUSE = httpx.Limits(max_keepalive_connections=0)  # a new connection for every request


def per_worker(server: Server, name: str, **labels: str) -> Counter[int]:
    """The counter ``name`` (its ``_total`` sample with ``labels``) of each worker process that
    counted it, by pid, from the workers' metric files."""
    counts: Counter[int] = Counter()
    [run_dir] = re.findall(r'event="node started" workers=\d+ run_dir=(\S+)', server.log())
    for path in (Path(run_dir) / "metrics").glob("counter_*.db"):
        pid = int(path.stem.rpartition("_")[2])
        for family in MultiProcessCollector.merge([str(path)], accumulate=False):
            for sample in family.samples:
                wanted = sample.name == f"{name}_total"
                if wanted and all(sample.labels.get(k) == v for k, v in labels.items()):
                    counts[pid] += int(sample.value)
    return counts


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[Server, str]]:
    data_dir = tmp_path / "station"
    token = provision(data_dir)
    cli(data_dir, "apiuser", "add", USER, "--password", PASSWORD)
    env = {"ALARMHUB_HEARTBEAT_TIMEOUT": str(TIMEOUT_S), "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "1"}
    server = Server(data_dir, extra_args=WORKERS, env=env).start()
    wait_for(lambda: len(server.worker_pids()) == 2, "both workers started", seconds=60)
    try:
        yield server, token
    finally:
        server.kill()


def post_signals(server: Server, token: str, panels: list[str]) -> list[int]:
    """Each signal on a connection of its own, eight at a time; their HTTP statuses."""

    def send(panel: str) -> int:
        with httpx.Client(base_url=server.url, timeout=30, limits=NO_REUSE) as client:
            answer = client.post(
                "/rx/site1:rx1/contact_id",
                json={"dnis": "C1", "panel": panel, "code": "E130", "zone_or_user": "1"},
                headers={"Authorization": f"Bearer {token}"},
            )
            return answer.status_code

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(send, panels))


def test_every_worker_accepts_signals(node: tuple[Server, str]) -> None:
    server, token = node
    panels = [f"W{n:05d}" for n in range(200)]
    assert post_signals(server, token, panels) == [200] * len(panels)
    stored = {row[0] for row in db_rows(server.data_dir, "SELECT panel FROM signal")}
    assert set(panels) <= stored
    workers = {pid for pids in server.worker_pids().values() for pid in pids}
    # each worker adds its counts to its metrics file once a second (metrics.Tally)
    wait_for(
        lambda: sum(per_worker(server, "alarmhub_signals_accepted").values()) == len(panels),
        "every worker's counts in its metrics file",
        seconds=10,
    )
    accepted = per_worker(server, "alarmhub_signals_accepted", interface="contact_id")
    assert set(accepted) == workers, f"not every worker accepted signals: {accepted}"
    assert sum(accepted.values()) == len(panels)
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text  # the node's: every worker's
    assert f'alarmhub_signals_accepted_total{{interface="contact_id"}} {len(panels)}.0' in metrics


def test_replayed_nonce_refused_at_another_worker(node: tuple[Server, str]) -> None:
    """The same signed query sent eight times at once, each on a connection of its own: one
    answer, seven refusals, until a round has reached both workers."""
    server, _ = node
    form = {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}
    files = {name: (None, value) for name, value in form.items()}
    params = {"dataSource": "methods", "*view": "xmsubmit"}
    url = f"{server.url}/rest/rest.php"
    rounds = 0
    while True:
        rounds += 1
        assert rounds <= 20, "the copies of a query never reached both workers"
        refused_before = per_worker(server, "alarmhub_queries_refused", status="401")
        answered_before = per_worker(server, "alarmhub_queries")
        with QueryClient(server.url, appkey="app", username=USER, password=PASSWORD) as client:
            signed = client.headers(form)

        def send(_: int, signed: dict[str, str] = signed) -> httpx.Response:
            return httpx.post(url, params=params, files=files, headers=signed, timeout=30)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(send, range(8)))
        statuses = Counter(answer.status_code for answer in answers)
        assert statuses == {200: 1, 401: 7}, statuses
        assert all(
            a.json() == errors.AUTHENTICATION_FAILED for a in answers if a.status_code == 401
        )
        refused = per_worker(server, "alarmhub_queries_refused", status="401") - refused_before
        answered = per_worker(server, "alarmhub_queries") - answered_before
        if len(set(refused) | set(answered)) == 2:
            break  # the worker that did not answer it refused it


class Beats(threading.Thread):
    """A pair beating every ``every`` seconds, each beat on a connection of its own."""

    def __init__(self, server: Server, token: str, pair: str, every: float) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.pair, self.every = server, token, pair, every
        self.stopped = threading.Event()
        self.answers: Counter[int] = Counter()

    def run(self) -> None:
        while not self.stopped.is_set():
            answer = httpx.get(
                f"{self.server.url}/rx/{self.pair}/hb",
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=10,
            )
            self.answers[answer.status_code] += 1
            self.stopped.wait(self.every)


def source_failures(server: Server, pair: str) -> int:
    text = f"{SOURCE_FAILURE.name} {pair}"
    return len(db_rows(server.data_dir, "SELECT alarm_id FROM alarm WHERE hist_text = ?", text))


def test_heartbeats_to_either_worker_keep_a_pair_alive(node: tuple[Server, str]) -> None:
    """Only one worker judges supervision; it knows of the beats the other one took, so a pair
    beating to both does not fail; once it stops, it fails once."""
    server, token = node
    beats = [Beats(server, token, "site1:rx1", every=0.3) for _ in range(3)]
    for beating in beats:
        beating.start()
    wait_for(
        lambda: len(per_worker(server, "alarmhub_heartbeats")) == 2,
        "beats taken by both workers",
        seconds=30,
    )
    time.sleep(TIMEOUT_S * 2)
    for beating in beats:
        beating.stopped.set()
        beating.join(timeout=30)
    assert source_failures(server, "site1:rx1") == 0, "a pair beating to both workers failed"
    assert sum(b.answers[200] for b in beats) == sum(sum(b.answers.values()) for b in beats)
    leaders = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert "alarmhub_supervision_leader 1.0" in leaders
    wait_for(lambda: source_failures(server, "site1:rx1") == 1, "SOURCE FAILURE", seconds=30)
    time.sleep(2)
    assert source_failures(server, "site1:rx1") == 1, "one failure, raised once"


def test_worker_killed_under_load_is_started_again(node: tuple[Server, str]) -> None:
    """A worker SIGKILLed under load: its clients lose their connections (nothing they were
    answered 200 for is lost), the parent starts it again, the other worker goes on."""
    server, token = node
    [killed] = server.worker_pids()[1]
    load = Load(server.url, token, tag="WK", threads=8).start()
    load.wait_accepted(300, 60)
    os.kill(killed, signal.SIGKILL)
    wait_gone(killed)
    wait_for(lambda: len(server.worker_pids()[1]) == 2, "worker 1 started again", seconds=60)
    [_, again] = server.worker_pids()[1]
    assert alive(again)
    load.wait_accepted(load.accepted_count() + 300, 60)
    answers = load.stop()
    result = check_store(server.data_dir, answers)
    assert result.accepted >= 600
    assert 'event="worker process ended; restarting" worker=1' in server.log()
    assert server.stop() == 0


def test_parent_killed_leaves_no_process(node: tuple[Server, str]) -> None:
    """Nor, once the next node has started, its run directory."""
    server, token = node
    writer = wait_for_writer(server)
    workers = [pid for pids in server.worker_pids().values() for pid in pids]
    [run_dir] = re.findall(r'event="node started" workers=\d+ run_dir=(\S+)', server.log())
    assert post_signals(server, token, ["K00001"]) == [200]
    assert server.process is not None
    server.process.kill()
    server.process.wait(timeout=30)
    for pid in [*workers, writer]:
        wait_gone(pid)
    assert Path(run_dir).is_dir()  # nobody was left to remove it
    again = Server(server.data_dir, extra_args=WORKERS).start()
    try:
        assert not Path(run_dir).exists()
    finally:
        again.stop()
    assert writer_pids(server) == [writer]
