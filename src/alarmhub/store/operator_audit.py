"""The audit trail of operators' actions: each one (signing on, taking, calls, holds, resolving,
dispatches, moves, storm mode, ...) is an OPERATOR record of history (PR_CHECKSUM ``OPERATOR``,
TYPE naming the action) on the alarm's account and incident number, or the station's, in the
transaction of the action. Giving an alarm to an operator is also the outbox's ``alarm.taken``
event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, insert

from alarmhub.core import events
from alarmhub.core import operations as ops
from alarmhub.core.operations import Action
from alarmhub.core.router import RoutePath
from alarmhub.store import events as outbox
from alarmhub.store import schema
from alarmhub.store.commit import allocate_incidents


def record(
    conn: Connection,
    code: str,
    action: Action,
    now_us: int,
    row: Mapping[str, Any] | None = None,
    detail: str = "",
    note: str | None = None,
) -> None:
    """One OPERATOR record in history: the action, who, when, on which alarm (and the
    ``alarm.taken`` event when it is taken, handed or taken over)."""
    number = allocate_incidents(conn, 1) if row is None else row["alarm_id"]
    conn.execute(
        insert(schema.history).values(history_row(code, action, now_us, row, number, detail, note))
    )
    how = _TAKEN.get(action)
    if how is not None and row is not None:
        data = events.alarm_data(row, opr=code, how=how)
        outbox.publish(conn, events.ALARM_TAKEN, row["account_number"], data, now_us)


_TAKEN = {Action.TAKE: "taken", Action.HANDED: "handed", Action.TAKE_OVER: "taken_over"}
"""The actions that give an alarm to an operator: ``how`` of its ``alarm.taken`` event."""


_STATION: Mapping[str, Any] = {
    "account_number": "", "code": "", "event_code": "", "area": "", "zone": "",
    "priority": "z", "color": "", "source": "", "destination": "", "dnis": "", "panel": "",
}  # fmt: skip
"""Where a record of no alarm is: the station's own (account "")."""


def history_row(
    code: str,
    action: Action,
    now_us: int,
    row: Mapping[str, Any] | None,
    number: int,
    detail: str,
    note: str | None,
) -> dict[str, Any]:
    """The history row of an OPERATOR record (incident ``number``: the alarm's, or a new one)."""
    where = _STATION if row is None else row
    return {
        "account_number": where["account_number"],
        "incident_number": number,
        "received_us": now_us,
        "code": where["code"],
        "event_code": where["event_code"],
        "area": where["area"],
        "zone": where["zone"],
        "type": action.value,
        "opr": code or None,
        "alarm_category": "O",
        "priority": where["priority"],
        "hist_text": ops.audit_text(action, code or "-", detail),
        "am_notify": "N",
        "pr_checksum": RoutePath.OPERATOR.value,
        "second_zone_is": "N",
        "color": where["color"],
        "video": "N",
        "alarm_id": None if row is None else row["alarm_id"],
        "source": where["source"],
        "destination": where["destination"],
        "dnis": where["dnis"],
        "panel": where["panel"],
        "note": note if note is not None else (detail or None),
    }
