"""The router's repository in the store: what routing reads (provisioning, cached per
revision by :mod:`alarmhub.store.provisioning_cache`; accounts; open alarms) and writes (alarms
and history, buffered and inserted in bulk) inside one routing or supervision transaction, with
the events they are (``alarm.raised``, ``alarm.restored``, ``supervision.*``) for the outbox."""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, bindparam, case, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import events
from alarmhub.core.alarm_types import FAIL_TO_TEST, AlarmType
from alarmhub.core.on_test import Test
from alarmhub.core.operations import OPEN_STATES, UNRESOLVED_STATES, AlarmState
from alarmhub.core.router import HistoryEvent, RoutePath
from alarmhub.core.sites import Arriving
from alarmhub.store import alarm_response, notifications, provisioning, queries, schema
from alarmhub.store import events as outbox
from alarmhub.store.commit import RowInsert, allocate_incidents, fixed_shape
from alarmhub.store.prepared import Prepared
from alarmhub.store.provisioning_cache import ProvisioningCache

ACCOUNT = schema.account.c
ALARM = schema.alarm.c

_ACCOUNT_CHUNK = 500
_KNOWN = Prepared(
    select(ACCOUNT.account_number, ACCOUNT.test_alarm_id).where(
        ACCOUNT.account_number.in_(bindparam("numbers", expanding=True))
    )
)
_TESTED = Prepared(
    update(schema.account)
    .where(ACCOUNT.account_number == bindparam("tested"))
    .values(
        last_test_us=case(
            (ACCOUNT.last_test_us > bindparam("at_us"), ACCOUNT.last_test_us),
            else_=bindparam("at_us"),
        ),
        test_alarm_id=None,
    )
)
_NOTHING_DESCRIBED: tuple[dict[tuple[str, str], str], dict[str, str]] = ({}, {})


HISTORY_COLUMNS = (
    "account_number", "incident_number", "received_us", "code", "event_code", "area", "zone",
    "type", "opr", "alarm_category", "priority", "hist_text", "am_notify", "pr_checksum",
    "second_zone_is", "color", "video", "alarm_id", "source", "destination", "dnis", "panel",
)  # fmt: skip


def _history_row(event: HistoryEvent) -> tuple[Any, ...]:
    """A history row, its values in the order of HISTORY_COLUMNS."""
    return (
        event.account_number, event.incident_number, event.received_us, event.code,
        event.event_code, event.area, event.zone, event.type, event.opr, event.alarm_category,
        event.priority, event.hist_text, "N", event.path.value, event.second_zone_is,
        event.color, "N", event.alarm_id, event.source, event.destination, event.dnis,
        event.panel,
    )  # fmt: skip


_NOTIFYING_FIELDS = itemgetter(0, 1, 2, 3, 5, 6, 11, 13)
"""What a history row tells a notification (``store.notifications.queue_signals``): account,
incident number, time, code, area, zone, HIST_TEXT, path."""

ALARM_COLUMNS = (
    "alarm_id", "state", "account_number", "type", "priority", "color", "hist_text", "path",
    "code", "event_code", "area", "zone", "source", "destination", "dnis", "panel",
    "received_us", "pending_us", "restore_us", "passcode_verified",
)  # fmt: skip
_alarm_values = itemgetter(*ALARM_COLUMNS)


def _alarm_row(alarm: HistoryEvent, pending_us: int, state: AlarmState) -> dict[str, Any]:
    # spelled out: dataclasses.asdict deep-copies every value and cost half of routing's time
    return {
        "alarm_id": alarm.incident_number,
        "account_number": alarm.account_number,
        "type": alarm.type,
        "priority": alarm.priority,
        "color": alarm.color,
        "hist_text": alarm.hist_text,
        "path": alarm.path.value,
        "received_us": alarm.received_us,
        "code": alarm.code,
        "event_code": alarm.event_code,
        "area": alarm.area,
        "zone": alarm.zone,
        "source": alarm.source,
        "destination": alarm.destination,
        "dnis": alarm.dnis,
        "panel": alarm.panel,
        "state": state.value,
        "pending_us": pending_us,
        "restore_us": None,
        "passcode_verified": "N",
    }


def _raised(alarm: dict[str, Any]) -> tuple[Any, ...]:
    """The ``alarm.raised`` event of an alarm row (pending, or on the storm list)."""
    data = events.alarm_data(alarm, state=alarm["state"])
    return outbox.row(events.ALARM_RAISED, alarm["account_number"], data, alarm["pending_us"])


_OPEN_ALARMS = Prepared(select(
    ALARM.alarm_id, ALARM.account_number, ALARM.event_code, ALARM.area, ALARM.zone, ALARM.type,
    ALARM.hist_text, ALARM.priority, ALARM.state,
).where(
    ALARM.account_number.in_(bindparam("accounts", expanding=True)),
    ALARM.event_code.in_(bindparam("events", expanding=True)),
    ALARM.restore_us.is_(None),
))  # fmt: skip
"""The alarms that the restorals of a batch may restore, looked up in bulk by the index of
(account, event code, ...): their areas and zones, and their states, are sorted out after (the
index serves a list of accounts and a list of events, not a list of keys; a condition on the
state would let the planner read the whole queue's index instead)."""
_UNRESOLVED = frozenset(UNRESOLVED_STATES)
_RESTORE = (
    update(schema.alarm)
    .where(ALARM.alarm_id == bindparam("restored"), ALARM.restore_us.is_(None))
    .values(restore_us=bindparam("at_us"))
)
"""A restoral arrived: the alarm's restore time, if it had none before."""
_RESTORE_MANY = Prepared(_RESTORE)
_RESTORE_ONE = _RESTORE.returning(
    ALARM.alarm_id, ALARM.account_number, ALARM.type, ALARM.hist_text, ALARM.priority,
    ALARM.state,
)  # fmt: skip
"""The same for an alarm not looked up before (a system alarm's restoral): its row."""
_JOIN = Prepared(
    update(schema.alarm)
    .where(ALARM.alarm_id == bindparam("joined"), ALARM.priority > bindparam("urgency"))
    .values(priority=bindparam("urgency"))
)
"""Signals joined an open alarm: it takes the most urgent of their priorities, if more urgent."""
_ALARM_STATE = Prepared(select(ALARM.state).where(ALARM.alarm_id == bindparam("alarm_id")))
_OPEN_UNKNOWN = Prepared(
    select(ALARM.alarm_id)
    .where(
        ALARM.state.in_(OPEN_STATES),
        ALARM.path == RoutePath.UNKNOWN.value,
        ALARM.source == bindparam("source"),
        ALARM.destination == bindparam("destination"),
    )
    .order_by(ALARM.alarm_id.desc())
    .limit(1)
)
"""A line's newest open UNKNOWN ACCOUNT alarm (a signal of an unknown account joins it)."""
OpenKey = tuple[str, str, str, str]  # account, event code, area, zone


class Inserts:
    """The bulk INSERTs of routing, compiled once per engine."""

    def __init__(self, engine: Engine) -> None:
        self.alarm = RowInsert(engine, schema.alarm, ALARM_COLUMNS)
        self.history = RowInsert(engine, schema.history, HISTORY_COLUMNS)
        self.event = RowInsert(engine, schema.event, outbox.COLUMNS)
        self.notification = RowInsert(engine, schema.notification, notifications.COLUMNS)


class SqlRepository:
    """The router's repository inside one transaction. Writes are buffered and inserted in bulk
    at :meth:`flush`; lookups see what this transaction has buffered so far."""

    def __init__(self, conn: Connection, cache: ProvisioningCache, inserts: Inserts) -> None:
        self._conn = conn
        self._cache = cache
        self._inserts = inserts
        self._memory = cache.memory  # accounts met, in this batch or earlier ones
        self._tested: dict[str, int] = {}  # account: its newest test report, written at flush
        self._alarms: dict[int, dict[str, Any]] = {}
        # the alarms a restoral may restore, oldest first, by what it names: those of the
        # accounts looked up (``preload_open_alarms``) and those raised in this transaction
        self._open: dict[OpenKey, list[dict[str, Any]]] = {}
        self._open_rows: dict[int, dict[str, Any]] = {}  # those looked up, by alarm id
        self._open_checked: set[OpenKey] = set()
        self._restores: list[dict[str, Any]] = []  # restore times to write at flush
        self._joins: dict[int, str] = {}  # alarms joined, the most urgent priority, for flush
        self._unknown_alarms: dict[tuple[str, str], int] = {}
        # OUTPUT CANNOT SEND alarms unresolved or raised in this transaction, by output name
        # (store.outputs: one an output at a time)
        self.cannot_send_alarms: dict[str, int] = {}
        self._history: list[tuple[Any, ...]] = []
        self._events: list[tuple[Any, ...]] = []  # in the order of what happened
        self._raised_event: dict[int, int] = {}  # alarm id: its alarm.raised in _events
        self._zones: dict[int, tuple[str, str]] = {}  # alarm id: zone, area of the last flushed
        self._queue_changed = False

    def preload_accounts(self, numbers: set[str]) -> None:
        """Look up many accounts at once (the accounts a batch of signals may belong to), but
        for those met before whose FAIL TO TEST alarm is known."""
        memory = self._memory
        memory.bound()
        wanted = sorted(
            n for n in numbers if n not in memory.unknown and n not in memory.test_alarms
        )
        for start in range(0, len(wanted), _ACCOUNT_CHUNK):
            chunk = wanted[start : start + _ACCOUNT_CHUNK]
            for number, test_alarm in _KNOWN.rows(self._conn, {"numbers": fixed_shape(chunk)}):
                memory.known.add(number)
                memory.test_alarms[number] = test_alarm
        memory.unknown.update(n for n in wanted if n not in memory.known)

    def preload_descriptions(self, accounts: set[str]) -> None:
        """Look up the zone descriptions and user names of many accounts at once (those of a
        batch of signals), but for the accounts met before."""
        memory = self._memory
        wanted = accounts - memory.described
        if wanted:
            memory.descriptions.update(alarm_response.descriptions(self._conn, wanted))
            memory.described.update(wanted)

    def descriptions(
        self, account_number: str, number: str
    ) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
        if account_number not in self._memory.described:
            self.preload_descriptions({account_number})
        return self._memory.descriptions.get(account_number, _NOTHING_DESCRIBED)

    def line_mask(self, dnis: str) -> str | None:
        return self._cache.masks.get(dnis)

    @property
    def known_accounts(self) -> set[str]:
        """The accounts looked up so far that exist."""
        return self._memory.known

    def account_exists(self, account_number: str) -> bool:
        memory = self._memory
        if account_number not in memory.test_alarms and account_number not in memory.unknown:
            self.preload_accounts({account_number})
        return account_number in memory.known

    def alarm_type(self, event_code: str) -> AlarmType:
        return self._cache.alarm_types[event_code]

    @property
    def storm_types(self) -> frozenset[str]:
        return self._cache.storm_types

    def on_test(self, account_number: str) -> Test | None:
        return self._cache.tests.get(account_number)

    def preload_open_alarms(self, keys: set[OpenKey]) -> None:
        """Look up at once the unrestored alarms that many restorals may restore (those of a
        batch): by account, event code, area and zone."""
        wanted = sorted(keys - self._open_checked)
        for start in range(0, len(wanted), _ACCOUNT_CHUNK):
            chunk = wanted[start : start + _ACCOUNT_CHUNK]
            keys = set(chunk)
            asked = {
                "accounts": fixed_shape(sorted({k[0] for k in chunk})),
                "events": fixed_shape(sorted({k[1] for k in chunk})),
            }
            rows = _OPEN_ALARMS.mappings(self._conn, asked)
            for row in sorted(rows, key=itemgetter("alarm_id")):
                key = (row["account_number"], row["event_code"], row["area"], row["zone"])
                if key not in keys or row["state"] not in _UNRESOLVED:
                    continue
                alarm = self._open_rows[row["alarm_id"]] = dict(row)
                found = self._open.setdefault(key, [])
                found.append(alarm)
                if len(found) > 1 and found[-2]["alarm_id"] > alarm["alarm_id"]:
                    found.sort(key=itemgetter("alarm_id"))  # after alarms raised here
        self._open_checked.update(wanted)

    def open_alarm(self, account_number: str, event_code: str, area: str, zone: str) -> int | None:
        key = (account_number, event_code, area, zone)
        if key not in self._open_checked:
            self.preload_open_alarms({key})
        found = self._open.get(key)
        return int(found[-1]["alarm_id"]) if found else None

    def open_unknown_alarm(self, source: str, destination: str) -> int | None:
        # the alarms raised in this transaction are pending; those before it are found in the
        # open states (few rows: the queue index); the caller holds the incident counter's lock,
        # so on a shared database no other node raises or joins one meanwhile
        key = (source, destination)
        known = self._unknown_alarms.get(key)
        if known is not None:
            return known
        # the line's alarm met in an earlier batch, if an operator has not closed it meanwhile
        remembered = self._memory.unknown_alarms.get(key)
        if remembered is not None:
            state = _ALARM_STATE.scalar(self._conn, {"alarm_id": remembered})
            if state in OPEN_STATES:
                self._unknown_alarms[key] = remembered
                return remembered
            del self._memory.unknown_alarms[key]
        found = _OPEN_UNKNOWN.scalar(self._conn, {"source": source, "destination": destination})
        if found is None:
            return None
        self._unknown_alarms[key] = self._memory.unknown_alarms[key] = int(found)
        return int(found)

    def join_alarm(self, alarm_id: int, priority: str) -> None:
        buffered = self._alarms.get(alarm_id)
        if buffered is not None:
            if priority < buffered["priority"]:
                buffered["priority"] = priority
                self._events[self._raised_event[alarm_id]] = _raised(buffered)
            return
        joined = self._joins.get(alarm_id)
        if joined is None or priority < joined:
            self._joins[alarm_id] = priority  # written at flush, once for the alarm
        self._queue_changed = True  # the alarm screen shows one signal more

    def new_incident_number(self) -> int:
        return allocate_incidents(self._conn, 1)

    def add_alarm(
        self, alarm: HistoryEvent, pending_us: int, state: AlarmState = AlarmState.PENDING
    ) -> None:
        row = self._alarms[alarm.incident_number] = _alarm_row(alarm, pending_us, state)
        key = (alarm.account_number, alarm.event_code, alarm.area, alarm.zone)
        self._open.setdefault(key, []).append(row)
        self._raised_event[alarm.incident_number] = len(self._events)
        self._events.append(_raised(row))
        if alarm.path is RoutePath.UNKNOWN:
            line = (alarm.source, alarm.destination)
            self._unknown_alarms[line] = self._memory.unknown_alarms[line] = alarm.incident_number

    def add_history(self, event: HistoryEvent) -> None:
        self._history.append(_history_row(event))

    def publish(self, kind: str, account: str, data: Mapping[str, Any], at_us: int) -> None:
        """An event for the outbox, written at :meth:`flush` (in the order published, with the
        ``alarm.raised`` of each alarm added)."""
        self._events.append(outbox.row(kind, account, data, at_us))

    def restore_arrived(self, alarm_id: int, at_us: int) -> None:
        """Mark the alarm ``open_alarm`` found restored (written at :meth:`flush`)."""
        buffered = self._alarms.get(alarm_id)
        row = buffered if buffered is not None else self._open_rows.get(alarm_id)
        if row is None:
            self._restore_unlooked(alarm_id, at_us)
            return
        if row.get("restore_us") is not None:
            return
        key = (row["account_number"], row["event_code"], row["area"], row["zone"])
        self._open[key].remove(row)
        row["restore_us"] = at_us
        if buffered is None:
            self._restores.append({"restored": alarm_id, "at_us": at_us})
            self._queue_changed = True
        if row["state"] != AlarmState.RESOLVED:
            self._restored(row, at_us)

    def _restore_unlooked(self, alarm_id: int, at_us: int) -> None:
        restored = (
            self._conn.execute(_RESTORE_ONE, {"restored": alarm_id, "at_us": at_us})
            .mappings()
            .first()
        )
        self._queue_changed = True
        if restored is not None and restored["state"] != AlarmState.RESOLVED:
            self._restored(dict(restored), at_us)

    def _restored(self, alarm: Mapping[str, Any], at_us: int) -> None:
        data = events.alarm_data(alarm, state=alarm["state"])
        self.publish(events.ALARM_RESTORED, alarm["account_number"], data, at_us)

    def test_report(self, account_number: str, at_us: int) -> int | None:
        """A periodic test report: the account's FAIL TO TEST alarm it ends, if any (its test
        timer is written at :meth:`flush`, one statement for every account of the batch)."""
        if not self.account_exists(account_number):
            return None
        ended = self._memory.test_alarms.get(account_number)
        self._memory.test_alarms[account_number] = None
        self._tested[account_number] = max(at_us, self._tested.get(account_number, at_us))
        if ended is None:
            return None
        data = events.supervision_data(FAIL_TO_TEST, account_number, int(ended))
        self.publish(events.SUPERVISION_RESTORED, account_number, data, at_us)
        return int(ended)

    def test_alarm_raised(self, account_number: str, alarm_id: int) -> None:
        """Supervision raised the account's FAIL TO TEST alarm: what routing remembers of the
        account says so (a failed transaction makes the writer forget it all, see
        :meth:`~alarmhub.store.provisioning_cache.AccountMemory.forget_test_alarms`)."""
        if account_number in self._memory.test_alarms:
            self._memory.test_alarms[account_number] = alarm_id

    def has_schedule(self, account_number: str) -> bool:
        return account_number in self._cache.scheduled

    def open_close(
        self, account_number: str, area: str, user: str, opening: bool, at_us: int, incident: int
    ) -> None:
        from alarmhub.store import schedules

        schedules.record(self._conn, account_number, area, user, opening, at_us, incident)

    def _queueing(self) -> notifications.Queueing:
        """The subscribed contacts met so far and the bulk insert, for the messages queued."""
        return notifications.Queueing(
            self._memory.recipients, self._inserts.notification.execute, self._zones
        )

    def flush(self) -> list[Arriving]:
        """Write what this transaction buffered; the pending alarms it raised, for ``hand_out``
        (those on the storm list are nobody's to hand out)."""
        raised = [
            Arriving(alarm_id, row["account_number"])
            for alarm_id, row in self._alarms.items()
            if row["state"] == AlarmState.PENDING
        ]
        if self._restores:
            _RESTORE_MANY.executemany(self._conn, self._restores)
            self._restores = []
        if self._joins:
            joins = [{"joined": a, "urgency": p} for a, p in sorted(self._joins.items())]
            _JOIN.executemany(self._conn, joins)
            self._joins = {}
        if self._alarms:
            alarms = self._alarms.values()
            self._inserts.alarm.execute(self._conn, [_alarm_values(r) for r in alarms])
            self._zones = {a: (r["zone"] or "", r["area"] or "") for a, r in self._alarms.items()}
            self._alarms.clear()
            self._raised_event.clear()
            self._queue_changed = True
        if self._events:
            outbox.publish_rows(
                self._conn, self._events, self._inserts.event.execute, self._cache.webhooks,
                self._cache.notify, self._queueing(),
            )  # fmt: skip
            self._events = []
        if self._queue_changed:
            provisioning.bump_revision(self._conn, queries.QUEUE)
            self._queue_changed = False
        if self._history:
            self._inserts.history.execute(self._conn, self._history)
            if self._cache.notify:  # openings and closings
                told = map(_NOTIFYING_FIELDS, self._history)
                notifications.queue_signals(self._conn, self._cache.notify, told, self._queueing())
            self._history = []
        if self._tested:
            tested = [{"tested": a, "at_us": at} for a, at in sorted(self._tested.items())]
            _TESTED.executemany(self._conn, tested)
            self._tested = {}
        return raised
