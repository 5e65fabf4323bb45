"""The database schema in SQLAlchemy Core; Alembic migrations create and evolve it.

Times are integers: microseconds since the UNIX epoch, UTC (``*_us`` columns).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

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
)

signal = Table(
    "signal",
    metadata,
    Column(
        "incident_number",
        BigInteger().with_variant(Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("dnis", String(5), nullable=False),
    Column("panel", String(10), nullable=False),
    Column("code", String(4), nullable=False),
    Column("area", String(2), nullable=False),
    Column("zone", String(3), nullable=False),
    Column("token_name", String(64), nullable=False),
    Column("received_us", BigInteger, nullable=False),
    Column("routed_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
Index(
    "ix_signal_unrouted",
    signal.c.incident_number,
    sqlite_where=signal.c.routed_us.is_(None),
    postgresql_where=signal.c.routed_us.is_(None),
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("token_name", String(64), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("incident_number", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("token_name", "idempotency_key"),
)
Index("ix_idempotency_created", idempotency.c.created_us)

heartbeat = Table(
    "heartbeat",
    metadata,
    Column("source", String(64), nullable=False),
    Column("destination", String(64), nullable=False),
    Column("last_seen_us", BigInteger, nullable=False),
    Column("timeout_s", Integer, nullable=True),
    Column("failed_us", BigInteger, nullable=True),
    PrimaryKeyConstraint("source", "destination"),
)

revision = Table(
    "revision",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
"""A counter per kind of provisioning data, bumped by every change so servers reload caches."""
