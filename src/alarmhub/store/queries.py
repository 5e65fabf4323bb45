"""Read-only queries over the queues, operators and history: what operators (the alarm screen,
the operators' statuses), reports and the query interface see."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, bindparam, func, or_, select

from alarmhub.core import operations as ops
from alarmhub.core import units
from alarmhub.core.operations import OPEN_STATES, UNRESOLVED_STATES, AlarmState
from alarmhub.store import alarm_response, plans, schema
from alarmhub.store.commit import UNROUTED
from alarmhub.store.statistics import first_signal_since

PENDING = AlarmState.PENDING
IN_PROCESS = AlarmState.IN_PROCESS
QUEUE = "queue"
"""The revision counter bumped by every change of the alarm queues."""
ALARM = schema.alarm.c
ACCOUNT = schema.account.c
HISTORY = schema.history.c
OPERATOR = schema.operator.c
SIGNAL = schema.signal.c


def queue_revision(conn: Connection) -> int:
    """A number that changes whenever the pending or in-process queue changes."""
    value = conn.execute(
        select(schema.revision.c.value).where(schema.revision.c.name == QUEUE)
    ).scalar()
    return int(value or 0)


def pending_alarms(conn: Connection, limit: int | None = None) -> list[dict[str, Any]]:
    """The pending queue: PRIORITY first ('!' before 'A' before 'a'), then the time the alarm
    entered pending, oldest first; with the account's company name and address."""
    return alarms_in(conn, PENDING, limit)


def count_pending(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).where(ALARM.state == PENDING)).scalar_one())


def alarm(conn: Connection, alarm_id: int) -> dict[str, Any] | None:
    row = conn.execute(select(schema.alarm).where(ALARM.alarm_id == alarm_id)).mappings().first()
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
    before: tuple[int, int] | None = None,
) -> list[dict[str, Any]]:
    """One account's history events received in ``[start_us, stop_us]``, newest first.

    Served by the index on (account_number, received_us): the cost grows with the events
    returned, not with the size of history. ``paths`` keeps only those PR_CHECKSUM paths;
    ``settled_only`` drops events whose alarm is not resolved yet (open, or on the storm list);
    ``before`` (received_us, event_id) keeps only the events after that one in this order (the
    next page of the integrator API).
    """
    params: dict[str, Any] = {"account": account_number, "start": start_us, "stop": stop_us}
    if paths is not None:
        params["paths"] = sorted(paths)
    if exclude_types:
        params["types"] = sorted(exclude_types)
    if limit is not None:
        params["limit"] = limit
    if before is not None:
        params["before_us"], params["before_id"] = before
    query = _history_query(
        paths is not None, bool(exclude_types), settled_only, limit is not None, before is not None
    )
    result = conn.execute(query, params)
    keys = tuple(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result.all()]


@cache
def _history_query(
    paths: bool, exclude_types: bool, settled_only: bool, limit: bool, before: bool = False
) -> Select[Any]:
    """The statement of :func:`account_history` for one combination of its filters, built once
    with bound parameters: the query interface runs it on every XMHIST, and building and
    hashing a new statement each time cost more than SQLite's part of a typical query."""
    query = (
        select(schema.history)
        .where(
            HISTORY.account_number == bindparam("account"),
            HISTORY.received_us >= bindparam("start"),
            HISTORY.received_us <= bindparam("stop"),
        )
        .order_by(HISTORY.received_us.desc(), HISTORY.event_id.desc())
    )
    if paths:
        query = query.where(HISTORY.pr_checksum.in_(bindparam("paths", expanding=True)))
    if exclude_types:
        query = query.where(HISTORY.type.not_in(bindparam("types", expanding=True)))
    if settled_only:
        still_open = select(ALARM.alarm_id).where(ALARM.state.in_(UNRESOLVED_STATES))
        query = query.where(or_(HISTORY.alarm_id.is_(None), HISTORY.alarm_id.not_in(still_open)))
    if before:
        at: Any = bindparam("before_us")
        query = query.where(
            or_(
                HISTORY.received_us < at,
                and_(HISTORY.received_us == at, HISTORY.event_id < bindparam("before_id")),
            )
        )
    if limit:
        query = query.limit(bindparam("limit"))
    return query


def history_of_incident(conn: Connection, incident_number: int) -> list[dict[str, Any]]:
    """Every history event that carries ``incident_number`` (a routed signal has exactly one)."""
    query = (
        select(schema.history)
        .where(HISTORY.incident_number == incident_number)
        .order_by(HISTORY.event_id)
    )
    return [dict(row) for row in conn.execute(query).mappings()]


def newest_signals(conn: Connection, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` newest stored signals, newest first."""
    query = select(schema.signal).order_by(SIGNAL.incident_number.desc()).limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def unrouted_count(conn: Connection) -> int:
    """The stored signals not routed yet (above the watermark of routed ones)."""
    query = select(func.count()).select_from(schema.signal).where(UNROUTED)
    return int(conn.execute(query).scalar_one())


def alarms_in(
    conn: Connection, state: str, limit: int | None = None, types: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Alarms in one state (of alarm ``types`` only, when given), PRIORITY first, then oldest;
    with the account's name and address (the account's state as ``account_state``)."""
    query = (
        select(
            schema.alarm,
            ACCOUNT.company_name,
            ACCOUNT.street,
            ACCOUNT.city,
            ACCOUNT.state.label("account_state"),
        )
        .select_from(
            schema.alarm.outerjoin(schema.account, ACCOUNT.account_number == ALARM.account_number)
        )
        .where(ALARM.state == state)
        .order_by(ALARM.priority, ALARM.pending_us, ALARM.alarm_id)
    )
    if types:
        query = query.where(ALARM.type.in_(types))
    if limit is not None:
        query = query.limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def starts_with(column: ColumnElement[str], prefix: str) -> ColumnElement[bool]:
    """``column`` begins with ``prefix``, letter case included, on both databases (the LIKE of
    SQLAlchemy's ``startswith`` ignores ASCII case on SQLite): its first characters compared
    exactly, beside the range from ``prefix`` on that an index of ``column`` starts at."""
    return and_(column >= prefix, func.substr(column, 1, len(prefix)) == prefix)


def open_alarms_after(
    conn: Connection, states: Sequence[str], prefix: str, after_id: int, limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit`` alarms in ``states`` of the accounts whose number starts with ``prefix``,
    by alarm id after ``after_id`` (the pages of the integrator API); with the company name."""
    query = (
        select(schema.alarm, ACCOUNT.company_name)
        .select_from(
            schema.alarm.outerjoin(schema.account, ACCOUNT.account_number == ALARM.account_number)
        )
        .where(ALARM.state.in_(list(states)), ALARM.alarm_id > after_id)
        .order_by(ALARM.alarm_id)
        .limit(limit)
    )
    if prefix:
        query = query.where(starts_with(ALARM.account_number, prefix))
    return [dict(row) for row in conn.execute(query).mappings()]


def in_process_alarms(conn: Connection) -> list[dict[str, Any]]:
    """Alarms operators are handling, PRIORITY first, then oldest; with the account's address."""
    return alarms_in(conn, IN_PROCESS)


def operator_statuses(conn: Connection) -> list[dict[str, Any]]:
    """Signed-on operators with their receiving status and colour (XMAINPRO status records)."""
    rows = conn.execute(
        select(
            OPERATOR.code,
            OPERATOR.name,
            OPERATOR.receiving,
            OPERATOR.signed_on_us,
            OPERATOR.status_us,
        )
        .where(OPERATOR.signed_on_us.is_not(None), OPERATOR.disabled.is_(False))
        .order_by(OPERATOR.code)
    ).mappings()
    out = []
    for r in rows:
        status = ops.Receiving.RECEIVING if r["receiving"] else ops.Receiving.NOT_RECEIVING
        out.append({**dict(r), "status": status.value, "color": ops.RECEIVING_COLOR[status]})
    return out


_JOIN_SLACK_US = units.US_PER_MINUTE


def alarm_detail(conn: Connection, alarm_id: int, history_limit: int = 50) -> dict[str, Any]:
    """Everything the alarm screen shows: the alarm, its account, the signals and actions of
    this alarm (restores included) and the account's recent history."""
    row = alarm(conn, alarm_id)
    if row is None:
        raise ops.not_found(alarm_id)
    account = None
    if row["account_number"]:
        found = (
            conn.execute(
                select(schema.account).where(ACCOUNT.account_number == row["account_number"])
            )
            .mappings()
            .first()
        )
        account = dict(found) if found else None
    # the alarm's own events carry its incident number; restorals linked to it are on the
    # same account: both found through indexes, never by reading all of history
    mine = (HISTORY.incident_number == alarm_id) | (
        (HISTORY.account_number == row["account_number"]) & (HISTORY.alarm_id == alarm_id)
    )
    if row["path"] == "UNKNOWN":  # signals of other unknown accounts that joined it (DC-09)
        joined = (HISTORY.incident_number > alarm_id) & (HISTORY.alarm_id == alarm_id)
        if row["resolved_us"] is not None:  # none joined after it was resolved (clock slack)
            after = first_signal_since(conn, row["resolved_us"] + _JOIN_SLACK_US)
            if after is not None:
                joined = joined & (HISTORY.incident_number < after)
        mine = mine | (joined & (HISTORY.pr_checksum == "UNKNOWN"))
    of_alarm = conn.execute(
        select(schema.history).where(mine).order_by(HISTORY.received_us, HISTORY.event_id)
    ).mappings()
    recent: list[dict[str, Any]] = []
    if row["account_number"]:
        recent = [
            dict(r)
            for r in conn.execute(
                select(schema.history)
                .where(HISTORY.account_number == row["account_number"])
                .order_by(HISTORY.received_us.desc(), HISTORY.event_id.desc())
                .limit(history_limit)
            ).mappings()
        ]
    response = None
    if account is not None:
        response = alarm_response.for_alarm(
            conn,
            row["account_number"],
            alarm_response.type_call_list(conn, row["event_code"]),
            row["zone"],
            row["area"],
            alarm_id,
        )
    return {
        "alarm": row,
        "account": account,
        "events": [dict(r) for r in of_alarm],
        "history": recent,
        "response": response,
        "plan": plans.plan_view(conn, row),
        "siblings": siblings(conn, row["account_number"], alarm_id),
    }


_SIBLINGS = (
    select(
        ALARM.alarm_id,
        ALARM.type,
        ALARM.hist_text,
        ALARM.state,
        ALARM.opr,
        ALARM.received_us,
        ALARM.priority,
        ALARM.color,
    )
    .where(
        ALARM.account_number == bindparam("account"),
        ALARM.state.in_(OPEN_STATES),
        ALARM.alarm_id != bindparam("alarm_id"),
    )
    .order_by(ALARM.alarm_id)
)


def siblings(conn: Connection, account_number: str, alarm_id: int) -> list[dict[str, Any]]:
    """An alarm's siblings: the other open alarms of its account, oldest first (ix_alarm_open);
    an alarm with no account has none."""
    if not account_number:
        return []
    found = conn.execute(_SIBLINGS, {"account": account_number, "alarm_id": alarm_id})
    return [dict(r) for r in found.mappings()]
