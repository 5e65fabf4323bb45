"""Storm mode in the store: the alarm TYPEs in storm mode (``type_handling.storm_since_us``),
switching it on and off, the storm list (alarms in state ``storm``) and its batch resolution,
each applied in the caller's write transaction with the rules of ``core.storm``.

Routing reads the TYPEs in storm mode from its provisioning cache, so a switch bumps the
provisioning revision (routing reloads them with its next batch) and the queue revision (the
consoles show the change). Every switch is an OPERATOR record of the station (STMON, STMOF),
every batch resolution a RESOLVE record for each alarm and one STMRS record for the batch, every
alarm sent from the storm list to pending an STMPD record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from alarmhub.core import operations as ops
from alarmhub.core import plans
from alarmhub.core import storm as rules
from alarmhub.core.alarm_types import merged
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState
from alarmhub.store import handling, operator_audit, provisioning, queries, schema
from alarmhub.store.operators import load_operator

TYPE = schema.type_handling.c
ALARM = schema.alarm.c
LIST_SHOWN = 2000
"""At most this many alarms of the storm list in one answer (the total says how many)."""


def storm_types(conn: Connection) -> frozenset[str]:
    """The alarm TYPEs in storm mode."""
    rows = conn.execute(select(TYPE.alarm_type).where(TYPE.storm_since_us.is_not(None)))
    return frozenset(rows.scalars())


def status(conn: Connection) -> dict[str, Any]:
    """The TYPEs in storm mode (since when, switched on by whom) and how many alarms the storm
    list holds, of each TYPE and in all."""
    counts: dict[str, int] = dict(
        conn.execute(
            select(ALARM.type, func.count())
            .where(ALARM.state == AlarmState.STORM)
            .group_by(ALARM.type)
        ).all()
    )
    rows = conn.execute(
        select(TYPE.alarm_type, TYPE.storm_since_us, TYPE.storm_by)
        .where(TYPE.storm_since_us.is_not(None))
        .order_by(TYPE.alarm_type)
    ).all()
    types = [
        {"type": t, "since_us": since, "by": by or "", "alarms": int(counts.get(t, 0))}
        for t, since, by in rows
    ]
    return {"types": types, "storm_list": int(sum(counts.values()))}


def storm_list(
    conn: Connection, types: Sequence[str] = (), limit: int = LIST_SHOWN
) -> dict[str, Any]:
    """The storm list (of ``types`` only, when given), PRIORITY first, then oldest: at most
    ``limit`` alarms, with the account's name and address, and how many there are."""
    alarms = queries.alarms_in(conn, AlarmState.STORM, limit, types)
    total = len(alarms)
    if total == limit:
        where = [ALARM.state == AlarmState.STORM]
        if types:
            where.append(ALARM.type.in_(types))
        total = int(conn.execute(select(func.count()).where(*where)).scalar_one())
    return {"alarms": alarms, "total": total}


def _requester(conn: Connection, code: str, what: str) -> str:
    """The supervisor or admin asking (refused otherwise); '' when nobody is named (the
    command line without ``--by``)."""
    if not code:
        return ""
    operator = load_operator(conn, code)
    if operator.disabled:
        raise ActionRefused("OPS-DISABLED", f"operator {code} is disabled", 403)
    ops.check_supervising(operator, what)
    return operator.code


def switch(
    conn: Connection, code: str, types: Sequence[str], on: bool, now_us: int
) -> dict[str, Any]:
    """Switch storm mode on or off for ``types`` as operator ``code`` ('' for nobody named).
    A TYPE already so is left as it is (no record). Answers the status, the TYPEs that changed
    and, when switching off, the storm list of those TYPEs, for batch resolution."""
    who = _requester(conn, code, "switch storm mode")
    allowed = rules.stormable(merged(provisioning.alarm_type_overrides(conn)).values())
    wanted = rules.check_types(types, allowed)
    current = storm_types(conn)
    changing = [t for t in wanted if (t in current) != on]
    for alarm_type in changing:
        values = {
            "storm_since_us": now_us if on else None,
            "storm_by": (who or None) if on else None,
            "updated_us": now_us,
        }
        updated = conn.execute(
            update(schema.type_handling).where(TYPE.alarm_type == alarm_type).values(**values)
        ).rowcount
        if not updated:
            conn.execute(insert(schema.type_handling).values(alarm_type=alarm_type, **values))
        detail = alarm_type
        if not on:
            left = conn.execute(
                select(func.count()).where(
                    ALARM.state == AlarmState.STORM, ALARM.type == alarm_type
                )
            ).scalar_one()
            detail = f"{alarm_type}, {left} ON THE STORM LIST"
        operator_audit.record(
            conn, who, Action.STORM_ON if on else Action.STORM_OFF, now_us, None, detail
        )
    if changing:
        provisioning.bump_revision(conn)
        provisioning.bump_revision(conn, queries.QUEUE)
    answer = {**status(conn), "changed": changing}
    if not on:
        answer["list"] = storm_list(conn, wanted)
    return answer


def pend(conn: Connection, code: str, alarm_ids: Sequence[int], now_us: int) -> int:
    """Send alarms of the storm list to pending, as supervisor ``code`` (one that needs an
    operator after all: a real outage among the weather's): refused, changing nothing, if one
    is not on the storm list. They keep the time they were raised (their age in pending), and
    are handed out as any pending alarm; an STMPD record for each. How many were sent."""
    who = _requester(conn, code, "send storm alarms to pending")
    rows = _on_storm_list(conn, alarm_ids)
    for row in rows:
        conn.execute(
            update(schema.alarm)
            .where(ALARM.alarm_id == row["alarm_id"], ALARM.state == AlarmState.STORM)
            .values(state=AlarmState.PENDING)
        )
        operator_audit.record(conn, who, Action.STORM_PEND, now_us, row)
    if rows:
        provisioning.bump_revision(conn, queries.QUEUE)
    return len(rows)


def _on_storm_list(
    conn: Connection, alarm_ids: Sequence[int] | None, types: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The alarms of the storm list named (refused if one is not on it), or, when None, the
    whole list (of ``types`` only, when given), oldest first."""
    query = select(schema.alarm).where(ALARM.state == AlarmState.STORM)
    if alarm_ids is not None:
        query = query.where(ALARM.alarm_id.in_(alarm_ids))
    if types:
        query = query.where(ALARM.type.in_([t.strip().upper() for t in types]))
    rows = [dict(r) for r in conn.execute(query.order_by(ALARM.alarm_id)).mappings()]
    if alarm_ids is not None and len(rows) != len(set(alarm_ids)):
        found = {r["alarm_id"] for r in rows}
        missing = [str(i) for i in alarm_ids if i not in found]
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ActionRefused("OPS-STATE", f"not on the storm list: alarm {shown}")
    return rows


def resolve(
    conn: Connection,
    code: str,
    alarm_ids: Sequence[int] | None,
    resolution: str,
    note: str,
    now_us: int,
    types: Sequence[str] = (),
) -> int:
    """Resolve alarms of the storm list in one go, as supervisor ``code``: those named
    (``alarm_ids``; refused, changing nothing, if one is not on the storm list), or, when None,
    the whole list (of ``types`` only, when given). A RESOLVE record for each, one STMRS record
    for the batch. How many were resolved.

    Nobody handled these alarms, so none was dispatched: a resolution that means a dispatch is
    refused (OPS-DISPATCH); the steps of their plans are not asked for (the batch is the
    supervisor's decision, as the storm mode was)."""
    who = _requester(conn, code, "resolve the storm list")
    chosen = handling.checked_resolution(conn, resolution, note)
    if plans.dispatch_needed(chosen.code) is not None:  # nobody handled them: none dispatched
        raise ActionRefused(
            "OPS-DISPATCH", f"{chosen.code} means a dispatch: the storm list's alarms had none"
        )
    rows = _on_storm_list(conn, alarm_ids, types)
    if not rows:
        return 0
    handling.close(conn, who, rows, chosen, AlarmState.STORM, now_us)
    kinds = " ".join(sorted({r["type"] for r in rows}))
    detail = f"{len(rows)} ALARMS {chosen.code} {kinds}"
    operator_audit.record(conn, who, Action.STORM_RESOLVE, now_us, None, detail)
    provisioning.bump_revision(conn, queries.QUEUE)
    return len(rows)
