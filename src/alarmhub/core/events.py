"""Events integrators hear of (webhooks, the event stream; decisions section 10): their kinds and
their bodies ``{"type", "timestamp", "data"}``. For alarm events ``data`` holds at least
``account``, ``incident_number``, ``alarm_id``, ``type``, ``hist_text`` and ``priority``, with the
values of the query interface's fields of those names."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from alarmhub.core import on_test, units
from alarmhub.core.alarm_types import SystemAlarm

ALARM_RAISED = "alarm.raised"
ALARM_TAKEN = "alarm.taken"
ALARM_RESOLVED = "alarm.resolved"
ALARM_RESTORED = "alarm.restored"
TEST_STARTED = "account.test_started"
TEST_ENDED = "account.test_ended"
SUPERVISION_FAILED = "supervision.failed"
SUPERVISION_RESTORED = "supervision.restored"
KINDS = (ALARM_RAISED, ALARM_TAKEN, ALARM_RESOLVED, ALARM_RESTORED, TEST_STARTED, TEST_ENDED,
         SUPERVISION_FAILED, SUPERVISION_RESTORED)  # fmt: skip


@lru_cache(maxsize=256)  # the alarms a routing batch raises share one time
def timestamp(at_us: int) -> str:
    """ISO 8601, UTC, to the millisecond: ``2027-01-15T08:00:00.000Z``."""
    moment = datetime.fromtimestamp(units.to_seconds(at_us), UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def envelope(kind: str, at_us: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """What an event is sent as (as JSON), by webhooks and the event stream alike."""
    return {"type": kind, "timestamp": timestamp(at_us), "data": dict(data)}


def alarm_data(alarm: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    """``data`` of an alarm event from an alarm's row (or a history event raising one)."""
    return {
        "account": alarm["account_number"],
        "incident_number": alarm["alarm_id"],
        "alarm_id": alarm["alarm_id"],
        "type": alarm["type"],
        "hist_text": alarm["hist_text"],
        "priority": alarm["priority"],
        **more,
    }


def supervision_data(
    kind: SystemAlarm, account: str, alarm_id: int | None, **more: Any
) -> dict[str, Any]:
    """``data`` of a ``supervision.*`` event: the failure (FAIL TO TEST, SOURCE FAILURE,
    COMMUNICATION FAILURE, RECEIVER LINK FAILURE, AUTOMATION OUTPUT FAILURE) and its TYPE, the
    account ('' when none), the alarm raised for it, and where it is (``source``/
    ``destination``, ``dc09_account``/``receiver``/``line``, the receiver ``link`` or the
    automation ``output``)."""
    return {"failure": kind.name, "type": kind.type, "account": account, "alarm_id": alarm_id,
            **more}  # fmt: skip


def test_data(test: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    """``data`` of an ``account.test_*`` event from a test's row (table ``on_test``): the
    account, the zones and TYPEs tested (empty: all), who asked, the reason, the console's
    operator, when it started and when it ends (ISO 8601)."""
    return {
        "account": test["account_number"],
        "zones": list(on_test.split(test["zones"] or "")),
        "types": list(on_test.split(test["types"] or "")),
        "by": test["by"],
        "reason": test["reason"],
        "opr": test["opr"],
        "started": timestamp(test["started_us"]),
        "ends": timestamp(test["ends_us"]),
        **more,
    }


def event_id_text(event_id: int) -> str:
    """An event's id on the wire: the event stream's ``id`` and the webhooks' ``webhook-id``."""
    return f"evt_{event_id}"


def event_id_of(text: str) -> int | None:
    """The event id ``text`` names (as :func:`event_id_text` writes it), or None."""
    number = text.strip().removeprefix("evt_")
    return int(number) if number.isdigit() and len(number) <= 18 else None
