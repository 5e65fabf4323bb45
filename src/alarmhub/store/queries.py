"""Read-only queries over the queues and history: what operators, reports and the query
interface see."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Connection, Select, bindparam, func, or_, select

from alarmhub.core.operations import OPEN_STATES, AlarmState
from alarmhub.store import schema as s

PENDING = AlarmState.PENDING
IN_PROCESS = AlarmState.IN_PROCESS
QUEUE = "queue"
"""The revision counter bumped by every change of the alarm queues."""


def queue_revision(conn: Connection) -> int:
    """A number that changes whenever the pending or in-process queue changes."""
    value = conn.execute(select(s.revision.c.value).where(s.revision.c.name == QUEUE)).scalar()
    return int(value or 0)


def pending_alarms(conn: Connection, limit: int | None = None) -> list[dict[str, Any]]:
    """The pending queue: PRIORITY first ('!' before 'A' before 'a'), then the time the alarm
    entered pending, oldest first; with the account's company name and address."""
    return alarms_in(conn, PENDING, limit)


def count_pending(conn: Connection) -> int:
    a = s.alarm.c
    return int(conn.execute(select(func.count()).where(a.state == PENDING)).scalar_one())


def alarm(conn: Connection, alarm_id: int) -> dict[str, Any] | None:
    row = conn.execute(select(s.alarm).where(s.alarm.c.alarm_id == alarm_id)).mappings().first()
    return dict(row) if row else None


def account_history(
    conn: Connection,
    account_number: str,
    start_us: int,
    stop_us: int,
    limit: int | None = None,
    paths: frozenset[str] | None = None,
    exclude_types: frozenset[str] = frozenset(),
    settled_only: bool = False,
) -> list[dict[str, Any]]:
    """One account's history events received in ``[start_us, stop_us]``, newest first.

    Served by the index on (account_number, received_us): the cost grows with the events
    returned, not with the size of history. ``paths`` keeps only those PR_CHECKSUM paths;
    ``settled_only`` drops events whose alarm is still open (pending or in process).
    """
    params: dict[str, Any] = {"account": account_number, "start": start_us, "stop": stop_us}
    if paths is not None:
        params["paths"] = sorted(paths)
    if exclude_types:
        params["types"] = sorted(exclude_types)
    if limit is not None:
        params["limit"] = limit
    query = _history_query(paths is not None, bool(exclude_types), settled_only, limit is not None)
    result = conn.execute(query, params)
    keys = tuple(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result.all()]


@cache
def _history_query(
    paths: bool, exclude_types: bool, settled_only: bool, limit: bool
) -> Select[Any]:
    """The statement of :func:`account_history` for one combination of its filters, built once
    with bound parameters: the query interface runs it on every XMHIST, and building and
    hashing a new statement each time cost more than SQLite's part of a typical query."""
    h = s.history.c
    query = (
        select(s.history)
        .where(
            h.account_number == bindparam("account"),
            h.received_us >= bindparam("start"),
            h.received_us <= bindparam("stop"),
        )
        .order_by(h.received_us.desc(), h.event_id.desc())
    )
    if paths:
        query = query.where(h.pr_checksum.in_(bindparam("paths", expanding=True)))
    if exclude_types:
        query = query.where(h.type.not_in(bindparam("types", expanding=True)))
    if settled_only:
        a = s.alarm.c
        still_open = select(a.alarm_id).where(a.state.in_(OPEN_STATES))
        query = query.where(or_(h.alarm_id.is_(None), h.alarm_id.not_in(still_open)))
    if limit:
        query = query.limit(bindparam("limit"))
    return query


def history_of_incident(conn: Connection, incident_number: int) -> list[dict[str, Any]]:
    """Every history event that carries ``incident_number`` (a routed signal has exactly one)."""
    h = s.history.c
    query = select(s.history).where(h.incident_number == incident_number).order_by(h.event_id)
    return [dict(row) for row in conn.execute(query).mappings()]


def newest_signals(conn: Connection, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` newest stored signals, newest first."""
    query = select(s.signal).order_by(s.signal.c.incident_number.desc()).limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def unrouted_count(conn: Connection) -> int:
    sig = s.signal.c
    query = select(func.count()).select_from(s.signal).where(sig.routed_us.is_(None))
    return int(conn.execute(query).scalar_one())


def alarms_in(conn: Connection, state: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Alarms in one state, PRIORITY first, then oldest; with the account's name and address
    (the account's state as ``account_state``)."""
    a = s.alarm.c
    acc = s.account.c
    query = (
        select(s.alarm, acc.company_name, acc.street, acc.city, acc.state.label("account_state"))
        .select_from(s.alarm.outerjoin(s.account, acc.account_number == a.account_number))
        .where(a.state == state)
        .order_by(a.priority, a.pending_us, a.alarm_id)
    )
    if limit is not None:
        query = query.limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def in_process_alarms(conn: Connection) -> list[dict[str, Any]]:
    """Alarms operators are handling, PRIORITY first, then oldest; with the account's address."""
    return alarms_in(conn, IN_PROCESS)
