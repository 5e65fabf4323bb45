"""An account's alarms together (one operator per site, decisions section 8): resolving
siblings with one resolution, and a supervisor moving an account's alarms to another
operator. Each runs in the caller's transaction with the rules of
``core.sites``; a resolution of several alarms is all or none (a refusal of any rolls back the
transaction).

Handing a new alarm to the operator working its account is part of handing alarms out
(``store.handling.hand_out``); the siblings the alarm screen lists are ``queries.siblings``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, select, update

from alarmhub.core import sites
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState, not_found
from alarmhub.store import handling, operator_audit, provisioning, queries, schema
from alarmhub.store.operators import load_operator

ALARM = schema.alarm.c


def _site_alarms(conn: Connection, where: Any) -> list[sites.SiteAlarm]:
    rows = conn.execute(
        select(ALARM.alarm_id, ALARM.account_number, ALARM.state, ALARM.opr)
        .where(where)
        .order_by(ALARM.alarm_id)
    ).all()
    return [sites.SiteAlarm(*row) for row in rows]


def resolve_together(
    conn: Connection,
    code: str,
    alarm_id: int,
    sibling_ids: Sequence[int],
    resolution: str,
    note: str,
    now_us: int,
) -> list[int]:
    """Resolve ``alarm_id`` and its siblings ``sibling_ids`` with one resolution and note:
    pending siblings are taken first, then each alarm is resolved as on its own
    (``handling.resolve``), so each gets its own RSLV record and every check of a resolution.
    A refusal names the alarm it is about. The alarms resolved, the first first."""
    wanted = sites.unique_ids(sibling_ids)
    first = _site_alarms(conn, ALARM.alarm_id == alarm_id)
    if not first:
        raise not_found(alarm_id)
    found = {a.alarm_id: a for a in _site_alarms(conn, ALARM.alarm_id.in_(wanted))}
    for sibling in sites.siblings_to_take(first[0], wanted, found):
        _about(sibling, partial(handling.take, conn, code, sibling, now_us))
    handling.resolve(conn, code, alarm_id, resolution, note, now_us)
    for sibling in wanted:
        _about(sibling, partial(handling.resolve, conn, code, sibling, resolution, note, now_us))
    return [alarm_id, *wanted]


def _about(sibling: int, work: Callable[[], object]) -> None:
    """Run ``work`` on a sibling; a refusal says which sibling it is about."""
    try:
        work()
    except ActionRefused as refusal:
        if f"alarm {sibling} " in refusal.message:
            raise
        raise ActionRefused(
            refusal.code,
            f"sibling alarm {sibling}: {refusal.message}",
            refusal.status,
        ) from refusal


def move_account(conn: Connection, code: str, account: str, to: str, now_us: int) -> list[int]:
    """A supervisor (``code``) moves every in-process or held alarm of ``account`` to operator
    ``to``; each gets an operator record (MOVE) naming from whom. The alarms moved."""
    mover = load_operator(conn, code)
    target = load_operator(conn, to)
    open_alarms = _site_alarms(
        conn, (ALARM.account_number == account) & ALARM.state.in_(sites.MOVED_STATES)
    )
    moving = sites.check_move(mover, target, account, open_alarms)
    moved = []
    for alarm in moving:
        changed = conn.execute(
            update(schema.alarm)
            .where(
                ALARM.alarm_id == alarm.alarm_id,
                ALARM.state == alarm.state,
                ALARM.opr.is_(None) if alarm.opr is None else ALARM.opr == alarm.opr,
            )
            .values(opr=to)
        ).rowcount
        if changed != 1:
            raise ActionRefused("OPS-STATE", f"alarm {alarm.alarm_id} changed meanwhile; try again")
        row = queries.alarm(conn, alarm.alarm_id)
        assert row is not None
        where = "" if alarm.state == AlarmState.IN_PROCESS else " ON HOLD"
        detail = f"FROM {alarm.opr or '-'} TO {to}{where}"
        operator_audit.record(conn, code, Action.MOVE, now_us, row, detail)
        moved.append(alarm.alarm_id)
    provisioning.bump_revision(conn, queries.QUEUE)
    handling.hand_out(conn, now_us)  # whoever was left without an alarm may get the next
    return moved
