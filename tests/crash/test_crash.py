"""Durability proven by killing processes.

Senders post uniquely identifiable signals as fast as they can while a process is killed. The
contract (decisions, section 2, delivery guarantees): a 200 is sent only after the signal is
committed, so every signal answered 200 is in the database afterwards, exactly once; what could
not be committed is answered 503 ``STORE-1`` (or not at all), never 200 and never 500.

Signals that were committed but whose answer was lost in the crash may be stored without a 200:
that is allowed (the caller retries; Idempotency-Key exists for that) and only reported.

SIGKILL proves process-crash durability: the node never answers before the commit. It cannot
prove the fsync itself (the operating system keeps written pages across a process kill); that
needs a power cut, which a test on one machine cannot make.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import pytest

from alarmhub.core import errors
from tests.support.crashing import Servers, alive, wait_for_writer, wait_gone
from tests.support.database import db_rows
from tests.support.processes import Server, provision

pytestmark = pytest.mark.long

PATH = "/rx/site1:rx1/contact_id"
SUCCESS = {"status_code": 200, "status": "success"}
STORE_FAILED = {
    "status_code": errors.STORE_FAILED.status_code,
    "status": "error",
    "error_code": errors.STORE_FAILED.error_code,
    "message": errors.STORE_FAILED.message,
}
WRITER_RESTARTING = "writer process ended; restarting"
SENDERS = 16
LOAD_SECONDS = 1.5
LOAD_TARGET = 3000  # 200s; the kill comes at this count or after LOAD_SECONDS
MIN_ACCEPTED = 300  # fewer 200s before a kill would make a crash test meaningless


# --- signals, senders, the database -----------------------------------------------------------


def body_for(panel: str) -> dict[str, str]:
    """The body of the signal identified by ``panel``; its other fields derive from it too."""
    n = int(panel[-6:])
    return {
        "dnis": "C1",
        "panel": panel,
        "code": "E130" if n % 2 else "R131",
        "zone_or_user": str(n % 1000),
    }


def stored_form(panel: str) -> tuple[str, str, str, str, str]:
    """(dnis, panel, code, area, zone) as the row of ``body_for(panel)`` must be stored."""
    body = body_for(panel)
    return body["dnis"], panel, body["code"], "00", body["zone_or_user"].zfill(3)


@dataclass
class Answer:
    panel: str
    status: int | None  # None: no HTTP answer (connection refused, reset, timed out)
    envelope: object = None
    error: str = ""  # why there was no answer: the httpx exception's class


@dataclass
class Load:
    """Threads that each post signals with panels ``<tag><thread:02d><n:06d>``, one at a time."""

    url: str
    token: str
    tag: str
    threads: int = SENDERS
    answers: list[list[Answer]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        assert len(self.tag) == 2 and self.tag.isalnum()
        self.answers = [[] for _ in range(self.threads)]
        for index in range(self.threads):
            worker = threading.Thread(target=self._send, args=(index,), daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def _send(self, index: int) -> None:
        record = self.answers[index].append
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as client:
            n = 0
            while not self._stop.is_set():
                n += 1
                panel = f"{self.tag}{index:02d}{n:06d}"
                try:
                    answer = client.post(PATH, json=body_for(panel))
                except httpx.HTTPError as exc:
                    record(Answer(panel, None, error=type(exc).__name__))
                    time.sleep(0.01)
                    continue
                record(Answer(panel, answer.status_code, orjson.loads(answer.content)))

    def accepted_count(self) -> int:
        return sum(1 for answers in self.answers for a in answers if a.status == 200)

    def wait_accepted(self, total: int, seconds: float) -> None:
        """Return once ``total`` 200s arrived in all or ``seconds`` passed, whichever is first."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.accepted_count() < total:
            time.sleep(0.01)

    def wait_under_load(self) -> None:
        """Let the load run up to ``LOAD_TARGET`` 200s or ``LOAD_SECONDS``; a slow machine gets
        more time to reach ``MIN_ACCEPTED``, so that a crash comes with enough signals at stake."""
        self.wait_accepted(LOAD_TARGET, LOAD_SECONDS)
        self.wait_accepted(MIN_ACCEPTED, 60)

    def stop(self) -> list[Answer]:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=60)
            assert not worker.is_alive(), "a sender did not stop"
        return [a for answers in self.answers for a in answers]


@dataclass(frozen=True)
class Row:
    incident_number: int
    dnis: str
    panel: str
    code: str
    area: str
    zone: str


def stored_rows(data_dir: Path) -> list[Row]:
    found = db_rows(data_dir, "SELECT incident_number, dnis, panel, code, area, zone FROM signal")
    return [Row(*row) for row in found]


@dataclass(frozen=True)
class Check:
    accepted: int
    stored: int
    extras: int


def check_store(data_dir: Path, answers: list[Answer]) -> Check:
    """Every signal answered 200 is stored exactly once, as sent; nothing is stored twice;
    incident numbers are unique; every other answer is the STORE-1 envelope or none at all."""
    for answer in answers:
        if answer.status == 200:
            assert answer.envelope == SUCCESS, answer
        elif answer.status is not None:
            assert (answer.status, answer.envelope) == (503, STORE_FAILED), answer
    rows = stored_rows(data_dir)
    numbers = Counter(row.incident_number for row in rows)
    assert not [n for n, times in numbers.items() if times > 1], "incident number reused"
    panels = Counter(row.panel for row in rows)
    twice = sorted(panel for panel, times in panels.items() if times > 1)
    assert not twice, f"{len(twice)} signals stored more than once, e.g. {twice[:5]}"
    by_panel = {row.panel: row for row in rows}
    accepted = {a.panel for a in answers if a.status == 200}
    missing = sorted(accepted - by_panel.keys())
    assert not missing, f"{len(missing)} signals answered 200 are not stored, e.g. {missing[:5]}"
    for panel in accepted:
        row = by_panel[panel]
        assert (row.dnis, row.panel, row.code, row.area, row.zone) == stored_form(panel)
    sent = {a.panel for a in answers}
    extras = (by_panel.keys() & sent) - accepted
    return Check(len(accepted), len(rows), len(extras))


KILL_ORDERS = {
    "server": ("server",),
    "server+writer": ("server", "writer"),
    "writer+server": ("writer", "server"),
}


def kill_node(server: Server, writer: int, order: str) -> None:
    """SIGKILL the processes named by ``order``, one right after the other: the server alone,
    or the whole node (server and writer, in either order); then wait until the writer is gone,
    so that nothing writes the database any more."""
    assert server.process is not None
    for victim in KILL_ORDERS[order]:
        if victim == "server":
            server.process.kill()
        else:
            os.kill(writer, signal.SIGKILL)
    server.process.wait(timeout=30)
    wait_gone(writer)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "station"


# --- (a) SIGKILL under load -------------------------------------------------------------------


@pytest.mark.parametrize("order", list(KILL_ORDERS))
def test_sigkill_under_load_loses_no_accepted_signal(
    data_dir: Path, servers: Servers, order: str
) -> None:
    """Two crashes on one data directory, the second after the restart from the first.
    ``server``: only the node's HTTP process is killed; its writer finishes the commit in
    progress and exits. ``server+writer`` and ``writer+server``: the whole node dies, so the
    commit in progress is lost, and a 200 sent before its commit would show up missing (with the
    writer killed first, the server even has a moment left to send such a 200)."""
    token = provision(data_dir)
    server = servers.start(data_dir)
    answers: list[Answer] = []
    cycles: list[set[str]] = []
    for cycle in range(1, 3):
        writer = wait_for_writer(server)
        load = Load(server.url, token, tag=f"K{cycle}").start()
        load.wait_under_load()
        kill_node(server, writer, order)
        cycle_answers = load.stop()
        accepted_before_kill = sum(1 for a in cycle_answers if a.status == 200)
        answers += cycle_answers
        cycles.append({a.panel for a in cycle_answers})

        server = servers.start(data_dir)
        result = check_store(data_dir, answers)
        print(
            f"cycle {cycle} ({order} killed):"
            f" {accepted_before_kill} answered 200 before the kill, {result.stored} rows stored"
            f" in all, {result.extras} stored without a 200"
        )
        assert accepted_before_kill >= MIN_ACCEPTED, "too little load for a meaningful crash"

    # Incident numbers increase across crashes: no number is given out again after a restart.
    rows = stored_rows(data_dir)
    spans = [[row.incident_number for row in rows if row.panel in sent] for sent in cycles]
    for earlier, later in itertools.pairwise(spans):
        assert max(earlier) < min(later)
    assert server.stop() == 0


# --- (b) the writer process killed ------------------------------------------------------------


def test_writer_killed_store_recovers_without_false_success(
    data_dir: Path, servers: Servers
) -> None:
    token = provision(data_dir)
    server = servers.start(data_dir)
    old_writer = wait_for_writer(server)
    load = Load(server.url, token, tag="W1", threads=4).start()
    load.wait_accepted(200, 60)
    os.kill(old_writer, signal.SIGKILL)
    wait_gone(old_writer)

    # Until the node has a new writer, a signal is refused with STORE-1, never a 200.
    probes: list[Answer] = []
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + 15
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        while not probes or probes[-1].status != 200:
            assert time.monotonic() < deadline, f"no 200 after the writer died: {probes[-3:]}"
            panel = f"P1{len(probes):08d}"
            answer = client.post(PATH, json=body_for(panel))
            probes.append(Answer(panel, answer.status_code, orjson.loads(answer.content)))
            time.sleep(0.02)
    load.wait_accepted(load.accepted_count() + 200, 60)
    answers = load.stop() + probes

    new_writer = wait_for_writer(server, not_pid=old_writer)
    assert alive(new_writer)
    assert WRITER_RESTARTING in server.log()
    result = check_store(data_dir, answers)
    refused = sum(1 for a in answers if a.status == 503)
    print(
        f"writer killed: {result.accepted} answered 200, {refused} answered 503 STORE-1,"
        f" {result.stored} rows stored, {result.extras} stored without a 200,"
        f" {len(probes)} probes until the first 200 after the kill"
    )
    assert probes[-1].panel in {row.panel for row in stored_rows(data_dir)}
    assert server.stop() == 0


# --- (c) SIGTERM under load -------------------------------------------------------------------


def test_sigterm_under_load_commits_everything_it_accepted(
    data_dir: Path, servers: Servers
) -> None:
    token = provision(data_dir)
    server = servers.start(data_dir)
    writer = wait_for_writer(server)
    load = Load(server.url, token, tag="T1").start()
    load.wait_under_load()
    assert server.stop(signal.SIGTERM, timeout=60) == 0, server.log()
    answers = load.stop()
    wait_gone(writer)
    result = check_store(data_dir, answers)
    refused = sum(1 for a in answers if a.status == 503)
    unanswered = Counter(a.error for a in answers if a.status is None)
    cut_off = sum(unanswered.values())
    print(
        f"SIGTERM: {result.accepted} answered 200, {refused} answered 503 STORE-1,"
        f" {cut_off} without an answer {dict(unanswered)}, {result.stored} rows stored,"
        f" {result.extras} stored without a 200"
    )
    assert result.accepted >= MIN_ACCEPTED, "too little load for a meaningful shutdown"


# --- (d) Idempotency-Key across a crash -------------------------------------------------------


def test_idempotency_key_survives_a_crash(data_dir: Path, servers: Servers) -> None:
    token = provision(data_dir)
    server = servers.start(data_dir)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "crash-retry-1"}
    body = body_for("ID01000001")
    first = httpx.post(f"{server.url}{PATH}", json=body, headers=headers, timeout=30)
    assert (first.status_code, first.json()) == (200, SUCCESS)
    kill_node(server, wait_for_writer(server), "server+writer")

    server = servers.start(data_dir)
    retry = httpx.post(f"{server.url}{PATH}", json=body, headers=headers, timeout=30)
    assert (retry.status_code, retry.json()) == (200, SUCCESS)
    assert server.stop() == 0

    keys = db_rows(
        data_dir,
        "SELECT incident_number FROM idempotency WHERE token_name = ? AND idempotency_key = ?",
        "main",
        "crash-retry-1",
    )
    signals = db_rows(data_dir, "SELECT incident_number FROM signal WHERE panel = ?", "ID01000001")
    assert len(signals) == 1
    assert keys == signals
