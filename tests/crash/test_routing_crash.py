"""Routing survives SIGKILL: every stored signal is routed exactly once.

The writer process routes the signals of group commits after answering them, in a transaction
of its own (store/writer_process.py), so a kill under load can leave the last commits' signals
stored but unrouted (at most about ROUTE_BATCH). When routing fails, the signals are stored all
the same and routed apart later, oldest first, with retries: a longer stored-but-unrouted
window that a kill can hit. The test makes routing fail for real
(an alarm row already holding a future incident number, so inserting that alarm violates the
primary key), kills the node in that state, removes the obstacle and restarts: the new writer
must route each waiting signal exactly once. Senders post uniquely identifiable signals on a
provisioned line; after every restart: one history event per signal, no alarm twice, every
signal answered 200 stored, each routed the way its panel calls for.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Engine

from alarmhub.core.account import Account
from alarmhub.core.router import SIGNAL_PATHS
from alarmhub.store import provisioning, queries
from alarmhub.store import schema as s
from alarmhub.store.commit import ROUTED
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.routing import ROUTE_BATCH
from tests.support.crashing import Servers, wait_for_writer, wait_gone
from tests.support.database import database_url
from tests.support.processes import Server, cli, provision, wait_for

pytestmark = pytest.mark.long

DNIS = "K1"
MASK = "#########"  # the panel is the account number
PATH = "/rx/site1:rx1/contact_id"
SENDERS = 12
CYCLES = ("routed with the commit", "routing failing", "routed with the commit again")
BLOCKED = 40  # incident numbers whose alarm is blocked, from 200 ahead of the counter
PER_THREAD = 1500  # panels n = 1..PER_THREAD of each thread and cycle may have an account
LOAD_TARGET = 2000
LOAD_SECONDS = 1.5
MIN_ACCEPTED = 200


def panel_of(tag: str, thread: int, n: int) -> str:
    """Nine characters: the account number line masking gives."""
    panel = f"{tag}{thread:02d}{n:05d}"
    assert len(panel) == len(MASK), panel
    return panel


def has_account(panel: str) -> bool:
    """Whether the test provisions the account of ``panel`` (a third of the first panels)."""
    n = int(panel[-5:])
    return n % 3 == 0 and n <= PER_THREAD


def body_for(panel: str) -> dict[str, str]:
    n = int(panel[-5:])
    return {
        "dnis": DNIS,
        "panel": panel,
        "code": "E130" if n % 2 else "R131",
        "zone_or_user": str(n % 1000),
    }


def expected_path(panel: str) -> str:
    """How the router must route the signal of ``panel``."""
    if not has_account(panel):
        return "UNKNOWN"
    return "PENDING" if body_for(panel)["code"] == "E130" else "RESTORE"


@dataclass
class Senders:
    """Threads posting signals with panels ``<tag><thread:02d><n:05d>``, one at a time."""

    url: str
    token: str
    tag: str
    accepted: list[list[str]] = field(default_factory=list)
    sent: list[list[str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Senders:
        self.accepted = [[] for _ in range(SENDERS)]
        self.sent = [[] for _ in range(SENDERS)]
        for index in range(SENDERS):
            worker = threading.Thread(target=self._send, args=(index,), daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def _send(self, index: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as client:
            n = 0
            while not self._stop.is_set() and n < 99_999:
                n += 1
                panel = panel_of(self.tag, index, n)
                self.sent[index].append(panel)
                try:
                    answer = client.post(PATH, json=body_for(panel))
                except httpx.HTTPError:
                    time.sleep(0.01)
                    continue
                if answer.status_code == 200:
                    self.accepted[index].append(panel)

    def accepted_count(self) -> int:
        return sum(len(a) for a in self.accepted)

    def wait_accepted(self, total: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.accepted_count() < total:
            time.sleep(0.01)

    def stop(self) -> set[str]:
        """Stop sending; the panels answered 200."""
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=60)
            assert not worker.is_alive(), "a sender did not stop"
        return {panel for panels in self.accepted for panel in panels}


def kill_node(server: Server, writer: int) -> None:
    """SIGKILL the writer (which routes) and the server right after it; wait until both are
    gone so that nothing writes the database any more."""
    assert server.process is not None
    os.kill(writer, signal.SIGKILL)
    server.process.kill()
    server.process.wait(timeout=30)
    wait_gone(writer)


def block_routing(engine: Engine) -> list[int]:
    """Occupy the alarm ids of incident numbers a little ahead: routing the first of those
    signals that raises an alarm fails (duplicate primary key), and stays failing."""
    with write_transaction(engine) as conn:
        last = conn.execute(
            select(s.sequence.c.value).where(s.sequence.c.name == "incident")
        ).scalar_one()
        ids = list(range(last + 200, last + 200 + BLOCKED))
        conn.execute(
            insert(s.alarm),
            [
                {"alarm_id": i, "state": "resolved", "account_number": "", "type": "BLOCK",
                 "priority": "z", "color": "07", "hist_text": "test obstacle", "path": "SYSTEM",
                 "code": "", "event_code": "", "area": "", "zone": "", "source": "",
                 "destination": "", "dnis": "", "panel": "", "received_us": 0, "pending_us": 0,
                 "passcode_verified": "N"}
                for i in ids
            ],
        )  # fmt: skip
    return ids


def unblock_routing(engine: Engine, ids: list[int]) -> None:
    with write_transaction(engine) as conn:
        conn.execute(delete(s.alarm).where(s.alarm.c.alarm_id.in_(ids), s.alarm.c.type == "BLOCK"))


def unrouted(engine: Engine) -> int:
    with engine.connect() as conn:
        return queries.unrouted_count(conn)


def check_routing(engine: Engine, accepted: set[str]) -> int:
    """Every stored signal is routed and has exactly one history event, the one its panel
    calls for; every signal answered 200 is among them; alarms are not duplicated. Returns
    the number of stored signals."""
    sig, h, a = s.signal.c, s.history.c, s.alarm.c
    with engine.connect() as conn:
        watermark = conn.execute(
            select(s.sequence.c.value).where(s.sequence.c.name == ROUTED)
        ).scalar_one()
        stored = {
            panel: (number, number <= watermark)
            for number, panel in conn.execute(select(sig.incident_number, sig.panel))
        }
        per_signal = conn.execute(
            select(sig.incident_number, func.count(h.event_id))
            .select_from(s.signal.outerjoin(s.history, h.incident_number == sig.incident_number))
            .group_by(sig.incident_number)
            .having(func.count(h.event_id) != 1)
        ).all()
        twice = conn.execute(
            select(h.incident_number)
            .where(h.pr_checksum.in_(sorted(SIGNAL_PATHS)))
            .group_by(h.incident_number)
            .having(func.count() > 1)
        ).all()
        paths = dict(
            conn.execute(
                select(h.incident_number, h.pr_checksum).where(
                    h.incident_number.in_(select(sig.incident_number))
                )
            ).all()
        )
        linked = dict(
            conn.execute(
                select(h.incident_number, h.alarm_id).where(
                    h.pr_checksum.in_(["PENDING", "UNKNOWN"])
                )
            ).all()
        )
        alarms = conn.execute(select(a.alarm_id, a.path, a.state)).all()
        pending_per_incident = conn.execute(
            select(a.alarm_id)
            .where(a.state == "pending")
            .group_by(a.alarm_id)
            .having(func.count() > 1)
        ).all()

    assert per_signal == [], f"signals without exactly one history event: {per_signal[:5]}"
    assert twice == [], f"incident numbers in two signal history events: {twice[:5]}"
    not_routed = [p for p, (_, routed) in stored.items() if not routed]
    assert not_routed == [], f"stored but unrouted: {not_routed[:5]}"
    missing = sorted(accepted - stored.keys())
    assert missing == [], f"{len(missing)} signals answered 200 are not stored: {missing[:5]}"
    wrong = [
        (panel, paths[number], expected_path(panel))
        for panel, (number, _) in stored.items()
        if paths[number] != expected_path(panel)
    ]
    assert wrong == [], f"routed the wrong way: {wrong[:5]}"

    alarm_ids = [alarm_id for alarm_id, _, _ in alarms]
    assert len(alarm_ids) == len(set(alarm_ids))
    assert pending_per_incident == []
    assert {alarm_id for alarm_id, path, _ in alarms if path in ("PENDING", "UNKNOWN")} == set(
        linked
    ), "one alarm for each signal routed to the pending queue, and no other"
    assert all(alarm_id == number for number, alarm_id in linked.items())
    assert not [row for row in alarms if row[1] == "SYSTEM"], "no runaway: every panel differs"
    return len(stored)


def test_sigkill_under_load_routes_every_signal_once(tmp_path: Path, servers: Servers) -> None:
    data_dir = tmp_path / "station"
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    engine = open_engine(database_url(data_dir))
    tags = [f"R{cycle}" for cycle in range(1, len(CYCLES) + 1)]
    provisioning.upsert_accounts(
        engine,
        (
            Account(panel_of(tag, thread, n), f"Subscriber {tag}{thread}/{n}")
            for tag in tags
            for thread in range(SENDERS)
            for n in range(3, PER_THREAD + 1, 3)
        ),
    )
    server = servers.start(data_dir)
    accepted: set[str] = set()
    try:
        for tag, cycle in zip(tags, CYCLES, strict=True):
            writer = wait_for_writer(server)
            blocked = block_routing(engine) if cycle == "routing failing" else []
            load = Senders(server.url, token, tag).start()
            load.wait_accepted(LOAD_TARGET, LOAD_SECONDS)
            load.wait_accepted(MIN_ACCEPTED, 60)
            kill_node(server, writer)
            cycle_accepted = load.stop()
            accepted |= cycle_accepted
            assert len(cycle_accepted) >= MIN_ACCEPTED, "too little load for a meaningful crash"

            # the database as the crash left it, before anything could route the rest
            at_kill = unrouted(engine)
            if blocked:
                assert at_kill > 0, "routing was failing: signals must wait unrouted"
                unblock_routing(engine, blocked)
            else:
                # signals wait unrouted in memory until ROUTE_BATCH of them have been committed
                # at most (one more commit on top: each sender has one request in flight)
                assert at_kill <= ROUTE_BATCH + SENDERS, "committed signals are routed promptly"
            server = servers.start(data_dir)
            wait_for(lambda: unrouted(engine) == 0, "all signals routed after the restart", 30)
            stored = check_routing(engine, accepted)
            print(
                f"cycle {tag} ({cycle}): {len(cycle_accepted)} answered 200, {at_kill} unrouted"
                f" at the kill, {stored} signals stored and routed in all"
            )
        assert server.stop() == 0
    finally:
        engine.dispose()
