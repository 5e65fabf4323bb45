"""Automation outputs (decisions section 12): each output's settings and what the node sending
it reports, and the frames waiting to be ACKed downstream, in the order they were committed."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table

from alarmhub.store.schema.base import metadata, serial

automation_output = Table(
    "automation_output",
    metadata,
    serial("output_id"),
    Column("name", String(40), nullable=False, unique=True),
    Column("protocol", String(16), nullable=False),  # surgard
    Column("transport", String(8), nullable=False),  # connect | listen | serial
    Column("addresses", String(2400), nullable=False),  # space-separated: primary, backups
    Column("baud", Integer, nullable=True),  # serial only
    Column("framing", String(3), nullable=True),  # serial only: 8N1 | 7E1
    Column("accounts", String(1000), nullable=False),  # space-separated prefixes; "": every one
    Column("receiver", Integer, nullable=False),
    Column("line", Integer, nullable=False),
    Column("line_digits", Integer, nullable=False),
    Column("ack_timeout_ms", Integer, nullable=False),
    Column("heartbeat_s", Integer, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("changed_us", BigInteger, nullable=False),
    # what the node sending the output reports (store.outputs.report)
    Column("state", String(8), nullable=False),  # up | down | failed | idle
    Column("address", String(255), nullable=True),
    Column("held_by", String(64), nullable=True),
    Column("sent", BigInteger, nullable=False),
    Column("resent", BigInteger, nullable=False),
    Column("acks", BigInteger, nullable=False),
    Column("naks", BigInteger, nullable=False),
    Column("timeouts", BigInteger, nullable=False),
    Column("last_sent_us", BigInteger, nullable=True),
    Column("last_delivered_us", BigInteger, nullable=True),
    Column("failing_since_us", BigInteger, nullable=True),
    Column("reported_us", BigInteger, nullable=True),
    # AUTOMATION OUTPUT FAILURE, raised by supervision from failing_since_us
    Column("alarm_id", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""One row per output; its runtime columns are the sending node's last report."""

output_frame = Table(
    "output_frame",
    metadata,
    serial("frame_id"),  # the order the frames were committed in
    Column("output_id", BigInteger, nullable=False),
    Column("frame", String(64), nullable=False),  # the frame's ASCII bytes, DC4 included
    Column("account_number", String(9), nullable=False),  # "" when the panel gave none
    Column("queued_us", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)
"""Each output's frames not yet ACKed downstream; the ACK's transaction deletes its frame."""
Index("ix_output_frame_output_id_frame_id", output_frame.c.output_id, output_frame.c.frame_id)
