"""The station's people and callers: operators, console sessions, resolution codes, users of the
query interface and their nonces."""

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
)

from alarmhub.store.schema.base import metadata

operator = Table(
    "operator",
    metadata,
    Column("code", String(3), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("role", String(10), nullable=False),
    Column("password_hash", String(200), nullable=True),
    Column("disabled", Boolean, nullable=False, default=False),
    Column("created_us", BigInteger, nullable=False),
    Column("signed_on_us", BigInteger, nullable=True),
    Column("receiving", Boolean, nullable=False, default=False),
    Column("status_us", BigInteger, nullable=True),
    Column("failed_logins", Integer, nullable=False, default=0),
    Column("locked_until_us", BigInteger, nullable=True),
)
"""Operators (OPR codes), their role, password hash (argon2), sign-on and receiving status."""

console_session = Table(
    "console_session",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("operator", String(3), ForeignKey("operator.code"), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("expires_us", BigInteger, nullable=False),
)
"""Console sign-ins: the SHA-256 of each session cookie, never the cookie itself."""
Index("ix_console_session_operator", console_session.c.operator)

resolution = Table(
    "resolution",
    metadata,
    Column("code", String(8), primary_key=True),
    Column("text", String(60), nullable=True),
    Column("updated_us", BigInteger, nullable=False),
)
"""The station's changes to the shipped resolution codes: a text adds or replaces a code, a
NULL text removes it."""

api_user = Table(
    "api_user",
    metadata,
    Column("username", String(64), primary_key=True),
    Column("password_encrypted", String(512), nullable=False),
    Column("hmac_only", Boolean, nullable=False),
    Column("created_us", BigInteger, nullable=False),
)
"""Users of the query interface. Passwords are encrypted with the station's secret key: the
digest schemes need them back, so a one-way hash cannot serve."""

nonce = Table(
    "nonce",
    metadata,
    Column("username", String(64), nullable=False),
    Column("nonce", String(64), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("username", "nonce"),
)
"""Nonces seen in the last 15 minutes, per user: a second use is a replay."""
Index("ix_nonce_created", nonce.c.created_us)
