"""Handling alarms: operators signing on and off, receiving, taking alarms (or being handed them),
working them (calls, notes, holds, take-overs) and resolving them, each applied in the caller's
write transaction with the rules of ``core.operations``.

Two operators never get the same alarm: taking one is a conditional UPDATE (``WHERE state =
'pending'``) whose row count says who won, which holds across processes and nodes sharing one
database. Every action writes an OPERATOR record to history (``store.operator_audit``) and
bumps the queue revision, so consoles and XMAPEND/XMAINPRO see it at once. Taking, handing and
taking over an alarm and resolving it are also events of the outbox (``alarm.taken``,
``alarm.resolved``), in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, or_, select, update

from alarmhub.core import events, response, sites
from alarmhub.core import operations as ops
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState, Operator
from alarmhub.core.sites import Arriving
from alarmhub.store import alarm_response, plans, provisioning, queries, schema
from alarmhub.store import events as outbox
from alarmhub.store.commit import fixed_shape
from alarmhub.store.operator_audit import history_row, record
from alarmhub.store.operators import ALARM, OPERATOR, load_operator
from alarmhub.store.prepared import Prepared
from alarmhub.store.resolutions import resolution_codes

HANDED_PER_PASS = 50
_ACCOUNT_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Call:
    """A call an operator made: the number, how it ended, and the contact, if one of the
    account's (their first number when ``phone`` is empty)."""

    outcome: response.CallOutcome
    phone: str = ""
    contact_id: int | None = None


def sign_on(conn: Connection, code: str, now_us: int, receiving: bool = True) -> None:
    operator = load_operator(conn, code)
    if operator.disabled:
        raise ActionRefused("OPS-DISABLED", f"operator {code} is disabled", 403)
    if not operator.signed_on:
        conn.execute(
            update(schema.operator)
            .where(OPERATOR.code == code)
            .values(signed_on_us=now_us, receiving=receiving, status_us=now_us)
        )
        record(conn, code, Action.SIGN_ON, now_us)
        if receiving:
            hand_out(conn, now_us, only=code)
    elif operator.receiving != receiving:
        set_receiving(conn, code, receiving, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)


def sign_off(conn: Connection, code: str, now_us: int) -> int:
    """Sign off; alarms still in process with the operator go back to pending (nothing is left
    with nobody). How many went back."""
    load_operator(conn, code)
    returned = conn.execute(
        select(schema.alarm).where(ALARM.opr == code, ALARM.state == AlarmState.IN_PROCESS)
    ).mappings()
    rows = [dict(r) for r in returned]
    for row in rows:
        conn.execute(
            update(schema.alarm)
            .where(ALARM.alarm_id == row["alarm_id"])
            .values(state=AlarmState.PENDING, opr=None)
        )
        record(conn, code, Action.SIGN_OFF, now_us, row, "ALARM BACK TO PENDING")
    conn.execute(
        update(schema.operator)
        .where(OPERATOR.code == code)
        .values(signed_on_us=None, receiving=False, status_us=now_us)
    )
    record(conn, code, Action.SIGN_OFF, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)
    if rows:
        hand_out(conn, now_us, arriving=_arriving(rows))
    return len(rows)


def set_receiving(conn: Connection, code: str, receiving: bool, now_us: int) -> None:
    operator = load_operator(conn, code)
    ops.check_active(operator)
    if operator.receiving == receiving:
        return
    conn.execute(
        update(schema.operator)
        .where(OPERATOR.code == code)
        .values(receiving=receiving, status_us=now_us)
    )
    record(conn, code, Action.RECEIVING if receiving else Action.NOT_RECEIVING, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)
    if receiving:
        hand_out(conn, now_us, only=code)


# taking alarms ------------------------------------------------------------------------------


def _held(conn: Connection, alarm_id: int) -> ops.AlarmHeld | None:
    row = conn.execute(
        select(ALARM.alarm_id, ALARM.state, ALARM.opr).where(ALARM.alarm_id == alarm_id)
    ).first()
    return ops.AlarmHeld(row.alarm_id, row.state, row.opr) if row else None


def take(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any]:
    """An operator picks alarm ``alarm_id`` from pending. Taking one already in process with
    them (handed to them meanwhile: one operator per site) changes nothing and answers it."""
    operator = load_operator(conn, code)
    held = _held(conn, alarm_id)
    if held is not None and held.state == AlarmState.IN_PROCESS and held.opr == code:
        ops.check_active(operator)
        return queries.alarm(conn, alarm_id) or {}
    ops.check_take(operator, held, alarm_id)
    row = _claim(conn, code, alarm_id, now_us)
    if row is None:  # another operator got it between the read and the update
        ops.check_take(operator, _held(conn, alarm_id), alarm_id)
        if (
            conn.execute(select(ALARM.not_for_opr).where(ALARM.alarm_id == alarm_id)).scalar()
            == code
        ):
            raise ActionRefused(
                "OPS-NOT-YOURS",
                f"alarm {alarm_id} is for another operator: it came of your passcode check",
            )
        raise ActionRefused("OPS-TAKEN", f"alarm {alarm_id} is already taken")
    record(conn, code, Action.TAKE, now_us, row)
    provisioning.bump_revision(conn, queries.QUEUE)
    return row


def take_next(conn: Connection, code: str, now_us: int) -> dict[str, Any] | None:
    """An operator takes the next pending alarm (PRIORITY, then oldest); None when pending is
    empty."""
    ops.check_active(load_operator(conn, code))
    row = _claim_next(conn, code, now_us)
    if row is not None:
        record(conn, code, Action.TAKE, now_us, row)
        provisioning.bump_revision(conn, queries.QUEUE)
    return row


_FOR_ANYONE_BUT = or_(ALARM.not_for_opr.is_(None), ALARM.not_for_opr != bindparam("asking"))
"""Alarms an operator may get: all but the DURESS alarms of their own passcode checks."""


def _claim(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any] | None:
    """The conditional update that decides who gets an alarm: only one caller sees a row."""
    claimed = conn.execute(
        update(schema.alarm)
        .where(ALARM.alarm_id == alarm_id, ALARM.state == AlarmState.PENDING, _FOR_ANYONE_BUT)
        .values(state=AlarmState.IN_PROCESS, opr=code, taken_us=now_us, hold_until_us=None),
        {"asking": code},
    ).rowcount
    return queries.alarm(conn, alarm_id) if claimed == 1 else None


def _claim_next(conn: Connection, code: str, now_us: int) -> dict[str, Any] | None:
    for _ in range(5):  # each miss means another operator won that alarm; try the next
        candidates = conn.execute(
            select(ALARM.alarm_id)
            .where(ALARM.state == AlarmState.PENDING, _FOR_ANYONE_BUT)
            .order_by(ALARM.priority, ALARM.pending_us, ALARM.alarm_id)
            .limit(5),
            {"asking": code},
        ).scalars()
        ids = list(candidates)
        if not ids:
            return None
        for alarm_id in ids:
            row = _claim(conn, code, alarm_id, now_us)
            if row is not None:
                return row
    return None


_RECEIVING = (
    OPERATOR.signed_on_us.is_not(None),
    OPERATOR.receiving.is_(True),
    OPERATOR.disabled.is_(False),
)
_ANYONE_RECEIVING = Prepared(select(OPERATOR.code).where(*_RECEIVING).limit(1))
_IDLE = (
    select(OPERATOR.code)
    .where(
        *_RECEIVING,
        OPERATOR.code.not_in(
            select(ALARM.opr)
            .where(ALARM.state == AlarmState.IN_PROCESS, ALARM.opr.is_not(None))
            .distinct()
        ),
    )
    .order_by(func.coalesce(OPERATOR.status_us, 0), OPERATOR.code)
    .limit(HANDED_PER_PASS)
)


_WORKING = Prepared(
    select(ALARM.account_number, ALARM.opr, func.coalesce(ALARM.taken_us, 0), ALARM.alarm_id)
    .join(schema.operator, OPERATOR.code == ALARM.opr)
    .where(
        ALARM.account_number.in_(bindparam("accounts", expanding=True)),
        ALARM.state == AlarmState.IN_PROCESS,
        OPERATOR.signed_on_us.is_not(None),
        OPERATOR.disabled.is_(False),
    )
)
"""The alarms of some accounts in process with a signed-on operator (ix_alarm_open)."""


def hand_out(
    conn: Connection,
    now_us: int,
    only: str | None = None,
    arriving: Sequence[Arriving] = (),
) -> list[tuple[str, int]]:
    """Hand pending alarms out; the (operator, alarm) pairs handed. First the ``arriving``
    alarms (just raised, or back in pending) whose account has an alarm in process go to that
    operator (``core.sites``); then the next pending alarms go to idle receiving operators, the
    longest idle first (``only`` limits that to one operator). It runs with every group commit
    that raises alarms: one query for the accounts of the batch, then it asks cheaply whether
    anyone receives at all."""
    handed = _hand_to_sites(conn, arriving, now_us)
    if not _ANYONE_RECEIVING.rows(conn):
        if handed:
            provisioning.bump_revision(conn, queries.QUEUE)
        return handed
    query = _IDLE if only is None else _IDLE.where(OPERATOR.code == only)
    for code in list(conn.execute(query).scalars()):
        # lock the operator's row (PostgreSQL) and check again that they are still idle
        conn.execute(select(OPERATOR.code).where(OPERATOR.code == code).with_for_update()).first()
        still_busy = conn.execute(
            select(func.count()).where(ALARM.opr == code, ALARM.state == AlarmState.IN_PROCESS)
        ).scalar_one()
        if still_busy:
            continue
        row = _claim_next(conn, code, now_us)
        if row is None:
            break  # pending is empty
        conn.execute(update(schema.operator).where(OPERATOR.code == code).values(status_us=now_us))
        record(conn, code, Action.HANDED, now_us, row)
        handed.append((code, row["alarm_id"]))
    if handed:
        provisioning.bump_revision(conn, queries.QUEUE)
    return handed


def _hand_to_sites(
    conn: Connection, arriving: Sequence[Arriving], now_us: int
) -> list[tuple[str, int]]:
    """The arriving alarms handed to the operator working their account (one operator per
    site), busy or not."""
    accounts = sorted({a.account_number for a in arriving if a.account_number})
    if not accounts:
        return []
    working = [
        sites.Working(*row)
        for start in range(0, len(accounts), _ACCOUNT_CHUNK)
        for row in _WORKING.rows(
            conn, {"accounts": fixed_shape(accounts[start : start + _ACCOUNT_CHUNK])}
        )
    ]
    handed: list[tuple[str, int]] = []
    for alarm_id, code in sites.site_operators(arriving, working).items():
        row = _claim(conn, code, alarm_id, now_us)
        if row is not None:  # else taken meanwhile
            record(conn, code, Action.HANDED, now_us, row)
            handed.append((code, alarm_id))
    return handed


def _arriving(rows: Sequence[Mapping[str, Any]]) -> list[Arriving]:
    return [Arriving(r["alarm_id"], r["account_number"], r["not_for_opr"]) for r in rows]


# working an alarm ---------------------------------------------------------------------------


def holding_alarm(conn: Connection, code: str, alarm_id: int) -> tuple[Operator, dict[str, Any]]:
    operator = load_operator(conn, code)
    ops.check_holding(operator, _held(conn, alarm_id), alarm_id)
    row = queries.alarm(conn, alarm_id)
    assert row is not None
    return operator, row


def log_call(
    conn: Connection,
    code: str,
    alarm_id: int,
    text: str,
    now_us: int,
    call: Call | None = None,
) -> None:
    """Log a call made for the alarm: in words (``text``), or whom, which number and how it
    ended (``call``, with ``text`` as its note); the first sets OPR_FIRST_CALL."""
    detail = ops.check_note(text, "call") if call is None else ""
    _, row = holding_alarm(conn, code, alarm_id)
    if call is not None:
        phone = call.phone
        name = None
        if call.contact_id is not None:
            contact = alarm_response.contact_of(conn, row["account_number"], call.contact_id)
            if contact is None:
                raise ActionRefused(
                    "OPS-CONTACT", f"the account has no contact {call.contact_id}", 422
                )
            numbers = [p["number"] for p in contact["phones"]]
            phone = phone or (numbers[0] if numbers else "")
            name = contact["name"]
        if not phone:
            raise ActionRefused("OPS-CALL", "a call names the number called", 422)
        problem = response.phone_problem(phone)
        if problem:
            raise ActionRefused("OPS-CALL", problem, 422)
        detail = ops.check_note(
            response.call_detail(name, phone, call.outcome, text.strip()), "call"
        )
        alarm_response.record_call(
            conn, alarm_id, code, now_us, phone, call.outcome, call.contact_id
        )
    if row["first_call_us"] is None:
        conn.execute(
            update(schema.alarm).where(ALARM.alarm_id == alarm_id).values(first_call_us=now_us)
        )
    record(conn, code, Action.CALL, now_us, row, detail)
    provisioning.bump_revision(conn, queries.QUEUE)


def add_note(conn: Connection, code: str, alarm_id: int, text: str, now_us: int) -> None:
    cleaned = ops.check_note(text)
    _, row = holding_alarm(conn, code, alarm_id)
    record(conn, code, Action.NOTE, now_us, row, cleaned)
    provisioning.bump_revision(conn, queries.QUEUE)  # consoles with the alarm open see it


def hold(conn: Connection, code: str, alarm_id: int, minutes: int, reason: str, now_us: int) -> int:
    """Put the alarm on hold for ``minutes``; it returns to pending, marked BEEN_ON_HOLD, when
    the time is up. The time it returns."""
    cleaned = ops.check_hold(minutes, reason)
    _, row = holding_alarm(conn, code, alarm_id)
    until = ops.hold_until(now_us, minutes)
    conn.execute(
        update(schema.alarm)
        .where(ALARM.alarm_id == alarm_id)
        .values(state=AlarmState.ON_HOLD, hold_until_us=until, hold_reason=cleaned)
    )
    record(conn, code, Action.HOLD, now_us, row, f"{minutes} MIN {cleaned}")
    provisioning.bump_revision(conn, queries.QUEUE)
    hand_out(conn, now_us, only=code)
    return until


def end_holds(conn: Connection, now_us: int) -> int:
    """Held alarms whose time is up go back to pending, marked BEEN_ON_HOLD; how many."""
    due = conn.execute(
        select(schema.alarm).where(ALARM.state == AlarmState.ON_HOLD, ALARM.hold_until_us <= now_us)
    ).mappings()
    rows = [dict(r) for r in due]
    for row in rows:
        conn.execute(
            update(schema.alarm)
            .where(ALARM.alarm_id == row["alarm_id"], ALARM.state == AlarmState.ON_HOLD)
            .values(state=AlarmState.PENDING, opr=None, been_on_hold=True, hold_until_us=None)
        )
        record(conn, row["opr"] or "", Action.HOLD_ENDED, now_us, row)
    if rows:
        provisioning.bump_revision(conn, queries.QUEUE)
        hand_out(conn, now_us, arriving=_arriving(rows))
    return len(rows)


def take_over(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any]:
    """A supervisor takes an in-process or held alarm from another operator."""
    operator = load_operator(conn, code)
    held = ops.check_take_over(operator, _held(conn, alarm_id), alarm_id)
    changed = conn.execute(
        update(schema.alarm)
        .where(ALARM.alarm_id == alarm_id, ALARM.state == held.state, ALARM.opr == held.opr)
        .values(state=AlarmState.IN_PROCESS, opr=code, hold_until_us=None)
    ).rowcount
    if changed != 1:
        raise ActionRefused("OPS-STATE", f"alarm {alarm_id} changed meanwhile; try again")
    row = queries.alarm(conn, alarm_id)
    assert row is not None
    record(conn, code, Action.TAKE_OVER, now_us, row, f"FROM {held.opr or '-'}")
    provisioning.bump_revision(conn, queries.QUEUE)
    return row


def resolve(
    conn: Connection, code: str, alarm_id: int, resolution: str, note: str, now_us: int
) -> None:
    """Resolve the alarm: it leaves the queues; its resolution, operator and handling times
    go to history."""
    chosen = checked_resolution(conn, resolution, note)
    _, row = holding_alarm(conn, code, alarm_id)
    plans.check_resolution(conn, row, chosen.code)
    close(conn, code, [row], chosen, AlarmState.IN_PROCESS, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)
    hand_out(conn, now_us, only=code)


@dataclass(frozen=True, slots=True)
class Resolution:
    """A resolution as checked: its code, the code's text and the operator's note."""

    code: str
    text: str
    note: str


def checked_resolution(conn: Connection, resolution: str, note: str) -> Resolution:
    """A resolution code the station has and a note of acceptable length."""
    resolution = resolution.strip().upper()
    text = ops.check_resolution(resolution, resolution_codes(conn))
    note = note.strip()
    if len(note) > ops.NOTE_MAX:
        raise ActionRefused("OPS-NOTE", f"note longer than {ops.NOTE_MAX} characters", 422)
    return Resolution(resolution, text, note)


_CLOSE_CHUNK = 500


def close(
    conn: Connection,
    code: str,
    rows: Sequence[Mapping[str, Any]],
    chosen: Resolution,
    state: AlarmState,
    now_us: int,
) -> None:
    """Resolve the alarms ``rows``, each still in ``state``, by operator ``code``: they leave
    the queues (or the storm list); each one's resolution, operator and handling times go to
    history as a RESOLVE record. Refused, changing nothing, if one of them changed meanwhile."""
    for start in range(0, len(rows), _CLOSE_CHUNK):
        ids = [row["alarm_id"] for row in rows[start : start + _CLOSE_CHUNK]]
        changed = conn.execute(
            update(schema.alarm)
            .where(ALARM.alarm_id.in_(ids), ALARM.state == state)
            .values(
                state=AlarmState.RESOLVED,
                resolved_us=now_us,
                resolution=chosen.code,
                opr=code or None,
            )
        ).rowcount
        if changed != len(ids):
            raise ActionRefused("OPS-STATE", "an alarm changed meanwhile; try again")
    detail = f"{chosen.code} {chosen.text}"
    records = []
    resolved = []
    for row in rows:
        times = ops.handling_times(row["pending_us"], row["taken_us"], row["first_call_us"], now_us)
        summary = ", ".join(f"{name} {value}" for name, value in times.items())
        full = f"{detail}; {summary}" + (f"; {chosen.note}" if chosen.note else "")
        records.append(
            history_row(code, Action.RESOLVE, now_us, row, row["alarm_id"], detail, full)
        )
        data = events.alarm_data(
            row, opr=code or None, resolution=chosen.code, resolution_text=chosen.text
        )
        resolved.append(outbox.row(events.ALARM_RESOLVED, row["account_number"], data, now_us))
    conn.execute(insert(schema.history), records)
    outbox.publish_rows(conn, resolved)
