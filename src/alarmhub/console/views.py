"""What the console's JSON carries: alarms, events, operators and snapshots as plain values,
built from the store's rows (one place for the field names the page reads)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from alarmhub.core.operations import Operator, handling_times

QUEUE_FIELDS = (
    "alarm_id",
    "state",
    "account_number",
    "company_name",
    "city",
    "type",
    "priority",
    "color",
    "hist_text",
    "area",
    "zone",
    "received_us",
    "pending_us",
    "restore_us",
    "opr",
    "taken_us",
    "first_call_us",
    "hold_until_us",
    "hold_reason",
    "been_on_hold",
)
"""The columns of a queue row in a snapshot (sent once per queue, rows as lists)."""

ALARM_FIELDS = (
    *QUEUE_FIELDS,
    "street",
    "account_state",
    "code",
    "event_code",
    "source",
    "destination",
    "dnis",
    "panel",
    "passcode_verified",
    "resolved_us",
    "resolution",
)
"""The fields of one alarm on the alarm screen."""

EVENT_FIELDS = (
    "event_id",
    "incident_number",
    "alarm_id",
    "account_number",
    "received_us",
    "code",
    "area",
    "zone",
    "type",
    "opr",
    "alarm_category",
    "priority",
    "color",
    "hist_text",
    "pr_checksum",
    "note",
)
"""The fields of a history event (signals, system events and operator records)."""

OPERATOR_FIELDS = (
    "code",
    "name",
    "role",
    "disabled",
    "created_us",
    "signed_on_us",
    "receiving",
    "status_us",
    "has_password",
    "in_process",
)
"""The fields of an operator in the list of operators (never a password hash)."""

SIBLING_FIELDS = (
    "alarm_id", "type", "hist_text", "state", "opr", "received_us", "priority", "color",
)  # fmt: skip
"""The fields of a sibling alarm (another open alarm of the account) on the alarm screen."""

ACCOUNT_FIELDS = ("account_number", "company_name", "street", "city", "state", "test_interval_s")


_BOOLEANS = frozenset({"been_on_hold", "disabled", "receiving", "has_password"})


def _value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if name in _BOOLEANS:
        return bool(value)
    return value


def pick(row: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: _value(row, name) for name in names}


def queue(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [[_value(row, name) for name in QUEUE_FIELDS] for row in rows]


def alarm(row: Mapping[str, Any], now_us: int) -> dict[str, Any]:
    """An alarm with its handling times (PEND_TIME, OPR_RECEIVED, ...) as of ``now_us``."""
    view = pick(row, ALARM_FIELDS)
    if row.get("state") == "resolved" and row.get("resolved_us"):
        now_us = int(row["resolved_us"])
    view["times"] = handling_times(
        int(row["pending_us"]), row.get("taken_us"), row.get("first_call_us"), now_us
    )
    return view


def operators(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [pick(row, OPERATOR_FIELDS) for row in rows]


def operator(op: Operator) -> dict[str, Any]:
    return {
        "code": op.code,
        "name": op.name,
        "role": op.role.value,
        "signed_on": op.signed_on,
        "receiving": op.receiving,
    }


def operator_statuses(
    statuses: Sequence[Mapping[str, Any]], in_process: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Signed-on operators, their receiving status and colour, and how many alarms each has
    in process."""
    handling = Counter(row["opr"] for row in in_process if row.get("opr"))
    return [
        {
            "code": s["code"],
            "name": s["name"],
            "status": s["status"],
            "color": s["color"],
            "receiving": bool(s["receiving"]),
            "signed_on_us": s["signed_on_us"],
            "status_us": s["status_us"],
            "in_process": handling.get(s["code"], 0),
        }
        for s in statuses
    ]


def detail(found: Mapping[str, Any], now_us: int) -> dict[str, Any]:
    """The alarm screen: the alarm, its account, its own events, the account's history, its
    other open alarms (siblings) and its open/close schedule (``console.schedules``)."""
    account = found.get("account")
    return {
        "alarm": alarm(found["alarm"], now_us),
        "account": pick(account, ACCOUNT_FIELDS) if account else None,
        "events": [pick(e, EVENT_FIELDS) for e in found["events"]],
        "history": [pick(e, EVENT_FIELDS) for e in found["history"]],
        "response": found.get("response"),
        "siblings": [pick(s, SIBLING_FIELDS) for s in found.get("siblings", ())],
        "plan": found.get("plan"),
        "schedule": found.get("schedule"),
        "server_us": now_us,
    }


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)
