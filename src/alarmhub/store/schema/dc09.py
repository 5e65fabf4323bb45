"""The SIA DC-09 receiver: receiver lines and DC-09 accounts."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
)

from alarmhub.store.schema.base import metadata

dc09_line = Table(
    "dc09_line",
    metadata,
    Column("receiver", String(6), nullable=False),
    Column("line", String(6), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("receiver", "line"),
)
"""Which dnis (and so which line mask) a DC-09 receiver line reports on; numbers in upper-case
hex without leading zeros, ``0`` for a frame that names none."""

dc09_account = Table(
    "dc09_account",
    metadata,
    Column("account", String(16), primary_key=True),
    Column("key_encrypted", String(512), nullable=True),
    Column("supervision_s", Integer, nullable=True),
    Column("last_message_us", BigInteger, nullable=True),
    Column("receiver", String(6), nullable=True),
    Column("line", String(6), nullable=True),
    Column("failed_us", BigInteger, nullable=True),
    Column("alarm_id", BigInteger, nullable=True),
    Column("created_us", BigInteger, nullable=False),
)
"""DC-09 accounts (the transmitter account of the frame header): the AES key (encrypted with
the station's secret key), the supervision interval (NULL: the station's default, 0: off), the
last message and its line, the communication failure in progress and its alarm."""
