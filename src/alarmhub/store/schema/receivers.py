"""Links to the station's hardware receivers (their automation outputs), the receiver lines
each maps to a dnis, and the frames that could not be read, kept as received."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, PrimaryKeyConstraint, String, Table

from alarmhub.store.schema.base import metadata, serial

receiver_link = Table(
    "receiver_link",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("protocol", String(16), nullable=False),  # surgard | ademco685 | d6500
    Column("transport", String(8), nullable=False),  # listen | connect | serial
    Column("address", String(255), nullable=False),  # HOST:PORT, or the serial device
    Column("baud", Integer, nullable=True),  # serial only
    Column("framing", String(3), nullable=True),  # serial only: 8N1 | 7E1
    Column("line_digits", Integer, nullable=False),
    Column("heartbeat_timeout_s", Integer, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("changed_us", BigInteger, nullable=False),  # its settings' last change
    # what the node holding the link reports, written in batches (store.receivers.report)
    Column("state", String(8), nullable=False),  # idle | up | failed
    Column("held_by", String(64), nullable=True),
    Column("last_seen_us", BigInteger, nullable=True),
    Column("last_frame", String(255), nullable=True),
    Column("frames", BigInteger, nullable=False),
    Column("acks", BigInteger, nullable=False),
    Column("naks", BigInteger, nullable=False),
    Column("unreadable", BigInteger, nullable=False),
    Column("per_minute", Integer, nullable=False),
    Column("reported_us", BigInteger, nullable=True),
    # supervision, as for DC-09 accounts: the node sets failed_us, supervision raises the alarm
    Column("failed_us", BigInteger, nullable=True),
    Column("alarm_id", BigInteger, nullable=True),
)
"""One link per receiver output; its runtime columns are the holding node's last report."""

receiver_line = Table(
    "receiver_line",
    metadata,
    Column("link", String(32), nullable=False),
    Column("receiver", Integer, nullable=False),
    Column("line", Integer, nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("link", "receiver", "line"),
)
"""Which dnis a link's receiver and line numbers map to (compared as numbers: ``01`` is 1)."""

receiver_frame = Table(
    "receiver_frame",
    metadata,
    serial("frame_id"),
    Column("link", String(32), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("kind", String(8), nullable=False),  # RXEVT | RXDAT
    Column("frame", String(1024), nullable=False),  # as received, control bytes escaped
    Column("alarm_id", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""Every receiver event and every frame alarmhub could not read, as received."""
