"""Many operators taking alarms at once, from several processes sharing one database (as several
nodes share one): every alarm is taken by exactly one operator and resolved once; none is lost.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from alarmhub.clock import now_us
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState
from alarmhub.core.router import RoutePath
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import handling, operations, operators, sqlite
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import database_url

ALARMS = 300
PROCESSES = 3
OPERATORS_PER_PROCESS = 4


def _work(url: str, codes: list[str], start: Any, outcome: Any) -> None:
    """One node: its operators race for the next alarm, each resolving what it got, and also
    racing for specific alarms by number, until pending is empty."""
    # twelve writers on one SQLite file: on a loaded machine its busy handler (no queue, just
    # sleeps) can leave one of them waiting past the node's 10 s; this test is about who wins
    # an alarm, not how long a writer waits, so the wait here is longer
    sqlite.BUSY_TIMEOUT_MS = 120_000
    engine = open_engine(url)
    refusals: list[str] = []
    start.wait()

    def operator(code: str) -> None:
        operations.run(engine, lambda c: handling.sign_on(c, code, now_us(), receiving=False))
        chance = random.Random(code)
        while True:
            # the pending list as a console shows it: stale by the time the operator clicks
            with engine.connect() as conn:
                listed = (
                    conn.execute(
                        select(s.alarm.c.alarm_id).where(s.alarm.c.state == AlarmState.PENDING)
                    )
                    .scalars()
                    .all()
                )
            if not listed:
                return
            try:
                if chance.random() < 0.5:
                    taken = operations.run(engine, lambda c: handling.take_next(c, code, now_us()))
                else:
                    picked = chance.choice(listed[:20])
                    taken = operations.run(
                        engine, lambda c, i=picked: handling.take(c, code, i, now_us())
                    )
            except ActionRefused as refused:  # another operator was quicker
                if refused.code not in ("OPS-TAKEN", "OPS-STATE"):
                    raise
                refusals.append(refused.code)
                continue
            if taken is None:
                continue
            alarm_id = taken["alarm_id"]
            operations.run(
                engine,
                lambda c, i=alarm_id: handling.resolve(c, code, i, "TEST", "", now_us()),
            )

    failures: list[BaseException] = []

    def guarded(code: str) -> None:
        try:
            operator(code)
        except BaseException as exc:
            failures.append(exc)
            raise

    threads = [threading.Thread(target=guarded, args=(code,)) for code in codes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    engine.dispose()
    outcome.put(len(refusals))
    if failures:
        raise SystemExit(1)


def test_many_operators_in_several_processes_never_handle_an_alarm_twice(tmp_path: Path) -> None:
    url = database_url(tmp_path, "a")
    engine = open_engine(url)
    upgrade(engine)
    codes = [f"{n:03d}" for n in range(PROCESSES * OPERATORS_PER_PROCESS)]
    for code in codes:
        operators.add_operator(engine, code, f"operator {code}", "operator", "password123")
    at = now_us()
    signals = [
        Signal("site", "rx", SignalFields("9", f"P{i}", "E130", "01", "001"), "t", at)
        for i in range(ALARMS)
    ]
    with write_transaction(engine) as conn:
        commit_signals(conn, SignalInsert(engine), signals, 3600 * 1_000_000)
    with write_transaction(engine) as conn:
        SignalRouting(engine, 1_000_000, 2).route(conn, at)

    context = multiprocessing.get_context("spawn")
    start = context.Event()
    outcome = context.Queue()
    workers = [
        context.Process(
            target=_work,
            args=(
                url,
                codes[i * OPERATORS_PER_PROCESS : (i + 1) * OPERATORS_PER_PROCESS],
                start,
                outcome,
            ),
        )
        for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=240)
        assert worker.exitcode == 0, "an operator process failed"
    refused = sum(outcome.get(timeout=10) for _ in workers)
    assert refused > 0, "operators picked alarms others had just taken, and were refused"

    h = s.history.c
    with engine.connect() as conn:
        states = Counter(
            dict(
                conn.execute(select(s.alarm.c.state, func.count()).group_by(s.alarm.c.state)).all()
            )
        )
        records = conn.execute(
            select(h.alarm_id, h.type, h.opr).where(
                h.pr_checksum == RoutePath.OPERATOR.value, h.alarm_id.is_not(None)
            )
        ).all()
    assert states == {AlarmState.RESOLVED: ALARMS}, "every alarm resolved, none lost"
    takes = Counter(alarm_id for alarm_id, kind, _ in records if kind == Action.TAKE)
    resolves = Counter(alarm_id for alarm_id, kind, _ in records if kind == Action.RESOLVE)
    assert len(takes) == ALARMS and set(takes.values()) == {1}, "each alarm taken exactly once"
    assert len(resolves) == ALARMS and set(resolves.values()) == {1}
    took = {alarm_id: opr for alarm_id, kind, opr in records if kind == Action.TAKE}
    resolved_by = {alarm_id: opr for alarm_id, kind, opr in records if kind == Action.RESOLVE}
    assert took == resolved_by, "each alarm resolved by the operator who took it"
    assert len(set(took.values())) > PROCESSES, "the operators really competed"
    engine.dispose()
