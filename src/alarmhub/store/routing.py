"""The routing of committed signals, in incident-number order, over the router's repository
(:mod:`alarmhub.store.repository`).

Routing goes in incident-number order, and each routing transaction moves the watermark of
routed signals (the counter ``routed``) past the signals it routed, so a signal is routed
exactly once even when the process dies between storing and routing it: the next start routes
what is above the watermark. The transaction that routes signals also queues their frames for
the automation outputs (:func:`alarmhub.store.outputs.enqueue_signals`), so they follow the
order of the routing.

On a database shared by several nodes (PostgreSQL) every routing transaction first takes the
incident counter's row lock (:func:`~alarmhub.store.commit.lock_incidents`): the nodes route one
after the other, in incident-number order, whichever node stored a signal, and each node's
runaway windows catch up on the signals the others routed before it routes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import units
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.router import RUNAWAY_PATHS, Router, StoredSignal, is_restoral, runaway_key
from alarmhub.core.runaway import RunawayMonitor
from alarmhub.store import handling, outputs, schema
from alarmhub.store.commit import ROUTED, UNROUTED, lock_incidents
from alarmhub.store.prepared import Prepared
from alarmhub.store.provisioning_cache import ProvisioningCache
from alarmhub.store.repository import Inserts, SqlRepository

log = logging.getLogger("alarmhub.router")
ROUTE_BATCH = 500
FORGET_EVERY_US = units.seconds_us(10)


SIGNAL = schema.signal.c
HISTORY = schema.history.c
SEQUENCE = schema.sequence.c
_UNROUTED = Prepared(
    select(
        SIGNAL.incident_number,
        SIGNAL.source,
        SIGNAL.destination,
        SIGNAL.dnis,
        SIGNAL.panel,
        SIGNAL.code,
        SIGNAL.area,
        SIGNAL.zone,
        SIGNAL.received_us,
    )
    .where(UNROUTED)
    .order_by(SIGNAL.incident_number)
    .limit(bindparam("limit"))
)
_ROUTED_SIGNALS = select(
    HISTORY.account_number, HISTORY.dnis, HISTORY.panel, HISTORY.received_us
).where(HISTORY.pr_checksum.in_(RUNAWAY_PATHS))
_ROUTED_ELSEWHERE = _ROUTED_SIGNALS.where(
    HISTORY.incident_number > bindparam("after"), HISTORY.incident_number < bindparam("before")
).order_by(HISTORY.incident_number, HISTORY.event_id)
_MARK_ROUTED = Prepared(
    update(schema.sequence)
    .where(SEQUENCE.name == ROUTED, SEQUENCE.value < bindparam("last"))
    .values(value=bindparam("last"))
)


class SignalRouting:
    """Routes committed signals; one per database writer.

    ``shared``: other nodes route into the same database (PostgreSQL), so the runaway windows
    also count the signals they routed, and routing never overtakes a signal they left
    unrouted."""

    def __init__(self, engine: Engine, runaway_limit: int, runaway_minutes: int) -> None:
        self.shared = engine.dialect.name != "sqlite"
        self.router = Router(RunawayMonitor(runaway_limit, runaway_minutes))
        self.cache = ProvisioningCache()
        self._inserts = Inserts(engine)
        self._last_sweep_us = 0
        self._counted_up_to = 0  # the runaway windows hold every signal routed up to here
        # frames queued for the automation outputs since the writer last told its node (told
        # once their transaction has committed, the node's idle senders read them at once)
        self.frames_queued = 0

    def recall(self, conn: Connection, now_us: int) -> None:
        """Rebuild the runaway windows from the history of the last minutes (after a start)."""
        self._counted_up_to = lock_incidents(conn)
        window_us = units.minutes_us(self.router.runaway.minutes)
        rows = conn.execute(
            _ROUTED_SIGNALS.where(HISTORY.received_us >= now_us - window_us).order_by(
                HISTORY.received_us, HISTORY.event_id
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
        self.cache.memory.forget_test_alarms()  # it may remember what was not committed
        self.recall(conn, now_us)

    def route(self, conn: Connection, now_us: int, limit: int = ROUTE_BATCH) -> int:
        """Route up to ``limit`` unrouted signals, oldest first, in the caller's transaction.

        The runaway windows count the signals routed here even when the caller's transaction
        does not commit; the caller then calls :meth:`recover` before routing again."""
        lock_incidents(conn)
        rows = _UNROUTED.rows(conn, {"limit": limit})
        if rows:
            self.route_signals(conn, [StoredSignal(*row) for row in rows], now_us)
        return len(rows)

    def route_signals(self, conn: Connection, signals: Sequence[StoredSignal], now_us: int) -> None:
        """Route ``signals`` (stored in incident-number order, in this transaction or before
        it, none routed yet, none older left unrouted) and move the watermark past them."""
        self.cache.refresh(conn)
        if self.shared:  # count what the other nodes routed since this one last routed; their
            # routing and supervision change the accounts' FAIL TO TEST alarms
            self.cache.memory.forget_test_alarms()
            self._observe(
                conn.execute(
                    _ROUTED_ELSEWHERE,
                    {"after": self._counted_up_to, "before": signals[0].incident_number},
                )
            )
        self._counted_up_to = signals[-1].incident_number
        repo = SqlRepository(conn, self.cache, self._inserts)
        self._preload(repo, signals)
        for signal in signals:
            self.router.route(repo, signal, now_us)
        if self.cache.outputs:  # the automation outputs' frames, in incident-number order
            self.frames_queued += outputs.enqueue_signals(conn, signals, now_us, self.cache, repo)
        raised = repo.flush()
        if raised:
            handling.hand_out(conn, now_us, arriving=raised)
        _MARK_ROUTED.execute(conn, {"last": signals[-1].incident_number})
        # the windows run on receive times: forget by the newest signal routed, not the clock;
        # a sweep walks every account, so it runs a few times a window, not every batch
        newest = signals[-1].received_us
        if newest - self._last_sweep_us >= FORGET_EVERY_US:
            self.router.runaway.forget_quiet(newest)
            self._last_sweep_us = newest

    def _preload(self, repo: SqlRepository, signals: Sequence[StoredSignal]) -> None:
        """Look up at once what the batch's signals will ask of the database: their accounts,
        the descriptions of their zones and users, the alarms their restorals may restore."""
        numbers = set()
        restoring = set()
        alarm_types = self.cache.alarm_types
        for signal in signals:
            mask = self.cache.masks.get(signal.dnis)
            number = apply_mask(mask, signal.panel) if mask is not None else None
            if number:
                numbers.add(number)
                if is_restoral(signal, alarm_types[signal.code[1:]]):
                    restoring.add((number, signal.code[1:], signal.area, signal.zone))
        repo.preload_accounts(numbers)
        repo.preload_descriptions(numbers & repo.known_accounts)
        if restoring:
            repo.preload_open_alarms(restoring)
