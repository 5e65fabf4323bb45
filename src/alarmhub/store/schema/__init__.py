"""The database schema in SQLAlchemy Core; Alembic migrations create and evolve it.

Times are integers: microseconds since the UNIX epoch, UTC (``*_us`` columns). The tables live in
one module per part of the station; every one is named here, as ``schema.<table>``.
"""

from __future__ import annotations

from alarmhub.store.schema.base import metadata
from alarmhub.store.schema.dc09 import (
    dc09_account,
    dc09_line,
)
from alarmhub.store.schema.integrator import (
    api_key,
    delivery_lane,
    event,
    webhook,
    webhook_delivery,
)
from alarmhub.store.schema.notifications import notification, notify_gateway, notify_template
from alarmhub.store.schema.operators import (
    api_user,
    console_session,
    nonce,
    operator,
    resolution,
)
from alarmhub.store.schema.outputs import automation_output, output_frame
from alarmhub.store.schema.receivers import receiver_frame, receiver_line, receiver_link
from alarmhub.store.schema.response import (
    account_user,
    account_zone,
    agency,
    call_attempt,
    call_list_entry,
    contact,
    dispatch,
    plan_step,
    step_done,
    type_handling,
)
from alarmhub.store.schema.signaling import (
    account,
    alarm,
    alarm_type,
    dnis,
    driver,
    heartbeat,
    history,
    idempotency,
    revision,
    sequence,
    signal,
    token,
    token_driver,
    token_heartbeat,
)
from alarmhub.store.schema.supervision import (
    holiday,
    on_test,
    open_close,
    schedule,
    schedule_window,
)

__all__ = [
    "account",
    "account_user",
    "account_zone",
    "agency",
    "alarm",
    "alarm_type",
    "api_key",
    "api_user",
    "automation_output",
    "call_attempt",
    "call_list_entry",
    "console_session",
    "contact",
    "dc09_account",
    "dc09_line",
    "delivery_lane",
    "dispatch",
    "dnis",
    "driver",
    "event",
    "heartbeat",
    "history",
    "holiday",
    "idempotency",
    "metadata",
    "nonce",
    "notification",
    "notify_gateway",
    "notify_template",
    "on_test",
    "open_close",
    "operator",
    "output_frame",
    "plan_step",
    "receiver_frame",
    "receiver_line",
    "receiver_link",
    "resolution",
    "revision",
    "schedule",
    "schedule_window",
    "sequence",
    "signal",
    "step_done",
    "token",
    "token_driver",
    "token_heartbeat",
    "type_handling",
    "webhook",
    "webhook_delivery",
]
