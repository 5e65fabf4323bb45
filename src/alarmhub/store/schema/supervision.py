"""What the station watches over time beyond heartbeats: accounts on test, and the open/close
schedules of accounts with the openings and closings their panels (or operators) report."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    false,
    true,
)

from alarmhub.store.schema.base import metadata, serial

on_test = Table(
    "on_test",
    metadata,
    serial("test_id"),
    Column("account_number", String(9), nullable=False),
    Column("zones", String(400), nullable=False, server_default=""),
    Column("types", String(200), nullable=False, server_default=""),
    Column("by", String(40), nullable=False),
    Column("reason", String(200), nullable=False, server_default=""),
    Column("opr", String(3), nullable=True),
    Column("started_us", BigInteger, nullable=False),
    Column("ends_us", BigInteger, nullable=False),
    Column("ended_us", BigInteger, nullable=True),
    Column("ended_by", String(40), nullable=True),
    sqlite_autoincrement=True,
)
"""Accounts put on test: which zones and alarm TYPEs (space-separated; empty: all), who asked and
why, the operator who did it (NULL: the command line), from when until when, and the return from
test (NULL while the test runs)."""
Index("ix_on_test_account", on_test.c.account_number, on_test.c.started_us)
Index("ix_on_test_running", on_test.c.ended_us, on_test.c.ends_us)

schedule = Table(
    "schedule",
    metadata,
    Column("account_number", String(9), nullable=False),
    Column("area", String(2), nullable=False, server_default=""),
    Column("timezone", String(64), nullable=True),
    Column("grace_min", Integer, nullable=False),
    Column("early_grace_min", Integer, nullable=False, server_default="0"),
    Column("late_to_open", Boolean, nullable=False, server_default=true()),
    Column("late_to_close", Boolean, nullable=False, server_default=true()),
    Column("early_close", Boolean, nullable=False, server_default=false()),
    Column("checked_us", BigInteger, nullable=False),
    Column("next_check_us", BigInteger, nullable=True),
    Column("lto_alarm_id", BigInteger, nullable=True),
    Column("ltc_alarm_id", BigInteger, nullable=True),
    Column("updated_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("account_number", "area"),
)
"""The open/close supervision of an account (area ``''``: the whole account) or of one area: its
time zone (NULL: the station's), grace, which checks are on, how far it has been judged
(``checked_us``) and when it next must be (NULL: nothing due), and its late alarms still open."""
Index("ix_schedule_next_check", schedule.c.next_check_us)

schedule_window = Table(
    "schedule_window",
    metadata,
    serial("window_id"),
    Column("account_number", String(9), nullable=False),
    Column("area", String(2), nullable=False, server_default=""),
    Column("day", Integer, nullable=True),
    Column("from_date", String(10), nullable=True),
    Column("to_date", String(10), nullable=True),
    Column("open_min", Integer, nullable=True),
    Column("close_min", Integer, nullable=True),
    sqlite_autoincrement=True,
)
"""Open/close windows in the schedule's local time, minutes after midnight (a close at or before
the open is on the next day): weekly ones by ``day`` (0 Monday .. 6 Sunday), temporary ones for
``from_date``..``to_date`` (ISO dates) that replace the weekly windows on those dates; a temporary
row with no open and close is a closed day."""
Index("ix_schedule_window_account", schedule_window.c.account_number, schedule_window.c.area)

holiday = Table(
    "holiday",
    metadata,
    Column("date", String(10), nullable=False),
    Column("account_number", String(9), nullable=False, server_default=""),
    Column("name", String(60), nullable=False, server_default=""),
    PrimaryKeyConstraint("date", "account_number"),
)
"""Days when the premises stay closed: station-wide (account ``''``) or one account's own."""

open_close = Table(
    "open_close",
    metadata,
    serial("event_id"),
    Column("account_number", String(9), nullable=False),
    Column("area", String(2), nullable=False, server_default=""),
    Column("opening", Boolean, nullable=False),
    Column("user_number", String(3), nullable=False, server_default=""),
    Column("opr", String(3), nullable=True),
    Column("incident_number", BigInteger, nullable=True),
    Column("at_us", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)
"""Openings and closings of accounts with a schedule: from the panel (the signal's incident number,
the panel user) or an operator's manual open/close (``opr``)."""
Index("ix_open_close_account", open_close.c.account_number, open_close.c.at_us)
