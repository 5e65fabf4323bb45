"""Signaling and routing: drivers, tokens, line masks, accounts, signals, idempotency keys,
heartbeats, counters, alarm types, the alarm queues and account history."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    false,
)

from alarmhub.store.schema.base import metadata, serial

driver = Table(
    "driver",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created_us", BigInteger, nullable=False),
)

token = Table(
    "token",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_us", BigInteger, nullable=False),
    Column("revoked_us", BigInteger, nullable=True),
)

token_driver = Table(
    "token_driver",
    metadata,
    Column("token_name", String(64), ForeignKey("token.name"), nullable=False),
    Column("driver_name", String(64), ForeignKey("driver.name"), nullable=False),
    PrimaryKeyConstraint("token_name", "driver_name"),
)

token_heartbeat = Table(
    "token_heartbeat",
    metadata,
    Column("token_name", String(64), ForeignKey("token.name"), nullable=False),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    PrimaryKeyConstraint("token_name", "source", "destination"),
)

dnis = Table(
    "dnis",
    metadata,
    Column("dnis", String(5), primary_key=True),
    Column("line_mask", String(9), nullable=False),
    Column("created_us", BigInteger, nullable=False),
)

account = Table(
    "account",
    metadata,
    Column("account_number", String(9), primary_key=True),
    Column("company_name", String(100), nullable=False),
    Column("street", String(100), nullable=False, default=""),
    Column("city", String(60), nullable=False, default=""),
    Column("state", String(30), nullable=False, default=""),
    Column("created_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    Column("test_interval_s", Integer, nullable=True),
    Column("last_test_us", BigInteger, nullable=True),
    Column("test_alarm_id", BigInteger, nullable=True),
    # response data (decisions section 7): the agencies dispatched to it, its alarm permit
    # and the Argon2 hash of its duress code
    Column("police", String(16), nullable=True),
    Column("fire", String(16), nullable=True),
    Column("medical", String(16), nullable=True),
    Column("permit", String(40), nullable=True),
    Column("duress_hash", String(200), nullable=True),
    Column("phone", String(20), nullable=True),  # the premises, the first call of many plans
)

signal = Table(
    "signal",
    metadata,
    serial("incident_number"),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("code", String(4), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("token_name", String(64), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    # the Idempotency-Key or DC-09 retry key it came with: on SQLite the writer remembers the
    # DC-09 keys of the last window in memory and reads them back from here (store.retry_keys)
    Column("idempotency_key", String(255), nullable=True),
    sqlite_autoincrement=True,
)
"""Every signal stored; those numbered above the counter ``routed`` (table ``sequence``) wait to
be routed."""

idempotency = Table(
    "idempotency",
    metadata,
    Column("token_name", String(64), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("incident_number", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    # what the first signal said (core.signal.digest): a retry must say the same
    Column("digest", String(32), nullable=True),
    PrimaryKeyConstraint("token_name", "idempotency_key"),
)
# the keys of one token older than its window are forgotten every second: (token, time) finds
# them without reading the token's other keys
Index("ix_idempotency_token_created", idempotency.c.token_name, idempotency.c.created_us)

heartbeat = Table(
    "heartbeat",
    metadata,
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("last_seen_us", BigInteger, nullable=False),
    Column("timeout_s", Integer, nullable=True),
    Column("failed_us", BigInteger, nullable=True),
    Column("alarm_id", BigInteger, nullable=True),
    PrimaryKeyConstraint("source", "destination"),
)

revision = Table(
    "revision",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
"""A counter per kind of provisioning data, bumped by every change so servers reload caches."""

sequence = Table(
    "sequence",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
"""Named counters; ``incident`` gives every signal and every system event its incident number."""

alarm_type = Table(
    "alarm_type",
    metadata,
    Column("code", String(3), primary_key=True),
    Column("type", String(5), nullable=False),
    Column("restore_type", String(5), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("category", String(1), nullable=False),
    Column("restore_expected", Boolean, nullable=False),
    Column("hist_text", String(60), nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    Column("contact_list", String(16), nullable=False, server_default=""),
)
"""The station's overrides of the shipped alarm types (core/alarm_types.tsv)."""

alarm = Table(
    "alarm",
    metadata,
    Column("alarm_id", BigInteger, primary_key=True, autoincrement=False),
    Column("state", String(12), nullable=False),
    Column("account_number", String(9), nullable=False),
    Column("type", String(5), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("hist_text", String(80), nullable=False),
    Column("path", String(8), nullable=False),
    Column("code", String(4), nullable=False),
    Column("event_code", String(3), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("pending_us", BigInteger, nullable=False),
    Column("restore_us", BigInteger, nullable=True),
    Column("passcode_verified", String(1), nullable=False, default="N"),
    Column("opr", String(3), nullable=True),
    Column("taken_us", BigInteger, nullable=True),
    Column("first_call_us", BigInteger, nullable=True),
    Column("hold_until_us", BigInteger, nullable=True),
    Column("hold_reason", String(200), nullable=True),
    Column("been_on_hold", Boolean, nullable=False, server_default=false()),
    Column("resolved_us", BigInteger, nullable=True),
    Column("resolution", String(8), nullable=True),
    # an alarm never handed to this operator: the DURESS alarm of the passcode check they made
    Column("not_for_opr", String(3), nullable=True),
)
"""Alarms that need an operator: the pending queue (state ``pending``), the In Process queue
(``in_process``, with the operator in ``opr``), held alarms (``on_hold`` until
``hold_until_us``) and resolved ones (``resolved``, kept for the record)."""
Index("ix_alarm_queue", alarm.c.state, alarm.c.priority, alarm.c.pending_us, alarm.c.alarm_id)
Index("ix_alarm_open", alarm.c.account_number, alarm.c.event_code, alarm.c.area, alarm.c.zone)
Index("ix_alarm_opr", alarm.c.opr, alarm.c.state)
# the handling report reads the alarms resolved in a window of days: by time, not by reading
# every resolved alarm kept
Index("ix_alarm_resolved", alarm.c.resolved_us)

history = Table(
    "history",
    metadata,
    serial("event_id"),
    Column("account_number", String(9), nullable=False),
    Column("incident_number", BigInteger, nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("code", String(4), nullable=False),
    Column("event_code", String(3), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("type", String(5), nullable=False),
    Column("opr", String(3), nullable=True),
    Column("alarm_category", String(1), nullable=False),
    Column("priority", String(1), nullable=False),
    Column("hist_text", String(80), nullable=False),
    Column("am_notify", String(1), nullable=False, default="N"),
    Column("pr_checksum", String(8), nullable=False),
    Column("second_zone_is", String(1), nullable=False),
    Column("color", String(2), nullable=False),
    Column("video", String(1), nullable=False, default="N"),
    Column("alarm_id", BigInteger, nullable=True),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("note", String(2000), nullable=True),
)
"""Account history: one event per routed signal, system alarm, restoral and operator action."""
Index("ix_history_account_time", history.c.account_number, history.c.received_us)
Index("ix_history_incident", history.c.incident_number)

# account response data (decisions section 7) --------------------------------------------
