"""Alarm processing in the store: the routing of committed signals in order, over the router's
repository (:mod:`alarmhub.store.repository`), and the supervision checks (fail to test,
heartbeat loss, DC-09 communication failure).

Each routing transaction marks the signals it routed, so a signal is routed exactly once even
when the process dies between storing and routing it: the next start routes what is unrouted.

On a database shared by several nodes (PostgreSQL) every routing and supervision transaction
first takes the incident counter's row lock (:func:`~alarmhub.store.commit.lock_incidents`):
the nodes route one after the other, in incident-number order, whichever node stored a signal,
and each node's runaway windows catch up on the signals the others routed before it routes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Connection, bindparam, cast, func, select, update
from sqlalchemy.engine import Engine

from alarmhub.core.alarm_types import (
    COMMUNICATION_FAILURE,
    FAIL_TO_TEST,
    SOURCE_FAILURE,
)
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.router import (
    SIGNAL_PATHS,
    Router,
    StoredSignal,
    runaway_key,
)
from alarmhub.core.runaway import RunawayMonitor
from alarmhub.core.supervision import test_overdue
from alarmhub.dc09.receiver import DESTINATION as DC09_DESTINATION
from alarmhub.store import dc09, operations
from alarmhub.store import schema as s
from alarmhub.store.commit import lock_incidents
from alarmhub.store.repository import Inserts, SqlRepository, Station

log = logging.getLogger("alarmhub.router")
ROUTE_BATCH = 500
FORGET_EVERY_US = 10 * 1_000_000


_sig = s.signal.c
_UNROUTED = (
    select(
        _sig.incident_number,
        _sig.source,
        _sig.destination,
        _sig.dnis,
        _sig.panel,
        _sig.code,
        _sig.area,
        _sig.zone,
        _sig.received_us,
    )
    .where(_sig.routed_us.is_(None))
    .order_by(_sig.incident_number)
    .limit(bindparam("limit"))
)
_h = s.history.c
_ROUTED_SIGNALS = select(_h.account_number, _h.dnis, _h.panel, _h.received_us).where(
    _h.pr_checksum.in_(SIGNAL_PATHS)
)
_ROUTED_ELSEWHERE = _ROUTED_SIGNALS.where(
    _h.incident_number > bindparam("after"), _h.incident_number < bindparam("before")
).order_by(_h.incident_number, _h.event_id)
_MARK_ROUTED = (
    update(s.signal)
    .where(
        _sig.incident_number >= bindparam("first"),
        _sig.incident_number <= bindparam("last"),
        _sig.routed_us.is_(None),
    )
    .values(routed_us=bindparam("routed_us"))
)


class Processor:
    """Routes committed signals and runs the supervision checks; one per database writer.

    ``shared``: other nodes route into the same database (PostgreSQL), so the runaway windows
    also count the signals they routed, and routing never overtakes a signal they left
    unrouted."""

    def __init__(
        self,
        engine: Engine,
        runaway_limit: int,
        runaway_minutes: int,
        test_grace_s: int,
    ) -> None:
        self._engine = engine
        self.shared = engine.dialect.name != "sqlite"
        self.router = Router(RunawayMonitor(runaway_limit, runaway_minutes))
        self.station = Station()
        self._inserts = Inserts(engine)
        self._test_grace_s = test_grace_s
        self._last_sweep_us = 0
        self._counted_up_to = 0  # the runaway windows hold every signal routed up to here

    def recall(self, conn: Connection, now_us: int) -> None:
        """Rebuild the runaway windows from the history of the last minutes (after a start)."""
        self._counted_up_to = lock_incidents(conn)
        window_us = self.router.runaway.minutes * 60 * 1_000_000
        rows = conn.execute(
            _ROUTED_SIGNALS.where(_h.received_us >= now_us - window_us).order_by(
                _h.received_us, _h.event_id
            )
        )
        self._observe(rows)

    def _observe(self, rows: Any) -> None:
        observe = self.router.runaway.observe
        for account, dnis, panel, received in rows:
            observe(runaway_key(account, dnis, panel), received)

    def recover(self, conn: Connection, now_us: int) -> None:
        """Forget the runaway windows and rebuild them from history: after a routing
        transaction that did not commit, they count signals that were never routed (a retry
        would count them twice, and could take an account's real alarms for a runaway)."""
        runaway = self.router.runaway
        self.router.runaway = RunawayMonitor(runaway.limit, runaway.minutes)
        self.recall(conn, now_us)

    def route(self, conn: Connection, now_us: int, limit: int = ROUTE_BATCH) -> int:
        """Route up to ``limit`` unrouted signals, oldest first, in the caller's transaction.

        The runaway windows count the signals routed here even when the caller's transaction
        does not commit; the caller then calls :meth:`recover` before routing again."""
        lock_incidents(conn)
        rows = conn.execute(_UNROUTED, {"limit": limit}).all()
        if rows:
            self.route_signals(conn, [StoredSignal(*row) for row in rows], now_us)
        return len(rows)

    def route_signals(self, conn: Connection, signals: Sequence[StoredSignal], now_us: int) -> None:
        """Route ``signals`` (stored in incident-number order, in this transaction or before
        it, none routed yet, none older left unrouted) and mark them routed."""
        self.station.refresh(conn)
        if self.shared:  # count what the other nodes routed since this one last routed
            self._observe(
                conn.execute(
                    _ROUTED_ELSEWHERE,
                    {"after": self._counted_up_to, "before": signals[0].incident_number},
                )
            )
        self._counted_up_to = signals[-1].incident_number
        repo = SqlRepository(conn, self.station, self._inserts)
        self._preload(repo, signals)
        for signal in signals:
            self.router.route(repo, signal, now_us)
        if repo.flush():
            operations.hand_out(conn, now_us)
        conn.execute(
            _MARK_ROUTED,
            {
                "first": signals[0].incident_number,
                "last": signals[-1].incident_number,
                "routed_us": now_us,
            },
        )
        # the windows run on receive times: forget by the newest signal routed, not the clock;
        # a sweep walks every account, so it runs a few times a window, not every batch
        newest = signals[-1].received_us
        if newest - self._last_sweep_us >= FORGET_EVERY_US:
            self.router.runaway.forget_quiet(newest)
            self._last_sweep_us = newest

    def _preload(self, repo: SqlRepository, signals: Sequence[StoredSignal]) -> None:
        numbers = set()
        for signal in signals:
            mask = self.station.masks.get(signal.dnis)
            number = apply_mask(mask, signal.panel) if mask is not None else None
            if number:
                numbers.add(number)
        repo.preload_accounts(numbers)

    def supervise(self, conn: Connection, now_us: int) -> int:
        """Raise FAIL TO TEST, SOURCE FAILURE and COMMUNICATION FAILURE (DC-09) alarms and their
        restorals, return held alarms
        whose time is up to pending, hand pending alarms to idle operators; how many changed."""
        lock_incidents(conn)
        self.station.refresh(conn)
        repo = SqlRepository(conn, self.station, self._inserts)
        changed = self._fail_to_test(conn, repo, now_us) + self._source_failures(conn, repo, now_us)
        changed += self._communication_failures(conn, repo, now_us)
        repo.flush()
        changed += operations.end_holds(conn, now_us)
        changed += len(operations.hand_out(conn, now_us))
        return changed

    def _fail_to_test(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        t = s.account.c
        last_test = func.coalesce(t.last_test_us, t.created_us)
        # the database keeps only the accounts that may be overdue; the rule decides
        rows = conn.execute(
            select(t.account_number, t.test_interval_s, last_test).where(
                t.test_interval_s.is_not(None),
                t.test_alarm_id.is_(None),
                last_test + cast(t.test_interval_s + self._test_grace_s, BigInteger) * 1_000_000
                < now_us,
            )
        ).all()
        raised = 0
        for account, interval_s, last in rows:
            if not test_overdue(last, interval_s, self._test_grace_s, now_us):
                continue
            alarm_id = self.router.raise_alarm(
                repo, FAIL_TO_TEST, account, FAIL_TO_TEST.name, now_us
            )
            conn.execute(
                update(s.account).where(t.account_number == account).values(test_alarm_id=alarm_id)
            )
            log.warning("fail to test", extra={"account": account, "incident_number": alarm_id})
            raised += 1
        return raised

    def _source_failures(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        h = s.heartbeat.c
        changed = 0
        failed = conn.execute(
            select(h.source, h.destination).where(h.failed_us.is_not(None), h.alarm_id.is_(None))
        ).all()
        for source, destination in failed:
            text = f"{SOURCE_FAILURE.name} {source}:{destination}"
            alarm_id = self.router.raise_alarm(repo, SOURCE_FAILURE, "", text, now_us)
            conn.execute(
                update(s.heartbeat)
                .where(h.source == source, h.destination == destination)
                .values(alarm_id=alarm_id)
            )
            log.warning(
                "source failure alarm",
                extra={"source": source, "destination": destination, "incident_number": alarm_id},
            )
            changed += 1
        back = conn.execute(
            select(h.source, h.destination, h.alarm_id).where(
                h.failed_us.is_(None), h.alarm_id.is_not(None)
            )
        ).all()
        for source, destination, alarm_id in back:
            text = f"{SOURCE_FAILURE.name} {source}:{destination}"
            self.router.restore_alarm(repo, SOURCE_FAILURE, alarm_id, "", text, now_us)
            conn.execute(
                update(s.heartbeat)
                .where(h.source == source, h.destination == destination)
                .values(alarm_id=None)
            )
            changed += 1
        return changed

    def _communication_failures(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        """COMMUNICATION FAILURE for each DC-09 account the node marked failed, and its restoral
        when the node marked it reporting again (as SOURCE FAILURE does for heartbeats). The
        alarm goes to the account that line masking gives the DC-09 account, if it exists."""
        t = s.dc09_account.c
        failed = conn.execute(
            select(t.account, t.receiver, t.line).where(
                t.failed_us.is_not(None), t.alarm_id.is_(None)
            )
        ).all()
        back = conn.execute(
            select(t.account, t.receiver, t.line, t.alarm_id).where(
                t.failed_us.is_(None), t.alarm_id.is_not(None)
            )
        ).all()
        if not failed and not back:
            return 0
        lines = dc09.lines(conn)
        for dc09_account, receiver, line in failed:
            dnis = lines.get((receiver, line), "")
            mask = self.station.masks.get(dnis)
            number = apply_mask(mask, dc09_account) if mask is not None else None
            account = number if number and repo.account_exists(number) else ""
            # where the alarm comes from, as an operator reads it on a signal's alarm
            origin = StoredSignal(
                0, f"R{receiver}L{line}", DC09_DESTINATION, dnis, dc09_account, "", "", "", now_us
            )
            text = f"{COMMUNICATION_FAILURE.name} DC09 #{dc09_account} {origin.source}"
            alarm_id = self.router.raise_alarm(
                repo, COMMUNICATION_FAILURE, account, text, now_us, origin
            )
            conn.execute(
                update(s.dc09_account).where(t.account == dc09_account).values(alarm_id=alarm_id)
            )
            log.warning(
                "communication failure alarm",
                extra={"dc09_account": dc09_account, "incident_number": alarm_id},
            )
        for dc09_account, receiver, line, alarm_id in back:
            raised_on = conn.execute(
                select(s.alarm.c.account_number).where(s.alarm.c.alarm_id == alarm_id)
            ).scalar()
            text = f"{COMMUNICATION_FAILURE.name} DC09 #{dc09_account} R{receiver}L{line}"
            self.router.restore_alarm(
                repo, COMMUNICATION_FAILURE, alarm_id, raised_on or "", text, now_us
            )
            conn.execute(
                update(s.dc09_account).where(t.account == dc09_account).values(alarm_id=None)
            )
        return len(failed) + len(back)
