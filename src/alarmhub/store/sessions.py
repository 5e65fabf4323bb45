"""Console sign-in: checking an operator's password, and the sessions it opens."""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass

from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Connection, delete, insert, select

from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Operator
from alarmhub.core.sign_in import session_expires_us
from alarmhub.core.tokens import token_hash
from alarmhub.store import schema
from alarmhub.store.operators import HASHER, OPERATOR, operator_from_row

SESSION = schema.console_session.c


@functools.cache
def _dummy_hash() -> str:
    """A hash that unknown operators' passwords are checked against (equal work for them),
    made at its first use: an Argon2 hash costs about 0.1 s, too much for every import."""
    return HASHER.hash(secrets.token_hex(16))


SIGN_IN_REFUSED = ActionRefused("OPS-SIGNIN", "wrong operator code or password", 401)
"""The one answer to a sign-in with an unknown code, a wrong password, or a disabled operator."""


@dataclass(frozen=True, slots=True)
class PasswordCheck:
    """The outcome of checking an operator's password, for :func:`sign_in`; ``reason`` says
    why it did not match, for the log only (``unknown``, ``password``, ``disabled``)."""

    code: str
    matched: bool
    reason: str = ""


def check_password(conn: Connection, code: str, password: str) -> PasswordCheck:
    """Check an operator's password (argon2: about 0.1 s of CPU) on a read connection, outside
    any write transaction, so that signals never wait for it. An unknown operator, one without
    a password, a disabled one and a wrong password take the same work and do not match."""
    row = conn.execute(
        select(OPERATOR.password_hash, OPERATOR.disabled).where(OPERATOR.code == code)
    ).first()
    if row is None or row.password_hash is None:
        _verify(_dummy_hash(), password)
        return PasswordCheck(code, False, "unknown")
    matched = _verify(row.password_hash, password)
    if not matched:
        return PasswordCheck(code, False, "password")
    if row.disabled:
        return PasswordCheck(code, False, "disabled")
    return PasswordCheck(code, True)


def sign_in(conn: Connection, check: PasswordCheck, now_us: int) -> tuple[Operator, str]:
    """Open a console session for a matched password check (in a write transaction): the
    operator and the session token. Expired sessions of every operator are purged here.

    Anything else is refused with :data:`SIGN_IN_REFUSED`, whatever the reason; failures are
    counted by the console's throttle (``core.sign_in``), not here. The columns
    ``failed_logins`` and ``locked_until_us`` of the old lock-out are no longer used."""
    code = check.code
    if not check.matched:
        raise SIGN_IN_REFUSED
    row = conn.execute(select(schema.operator).where(OPERATOR.code == code)).mappings().first()
    if row is None or row["password_hash"] is None or row["disabled"]:  # changed meanwhile
        raise SIGN_IN_REFUSED
    purge_sessions(conn, now_us)
    token = secrets.token_urlsafe(32)
    conn.execute(
        insert(schema.console_session).values(
            token_hash=token_hash(token),
            operator=code,
            created_us=now_us,
            expires_us=session_expires_us(now_us),
        )
    )
    return operator_from_row(row), token


def purge_sessions(conn: Connection, now_us: int) -> int:
    """Delete expired console sessions (of every operator); how many."""
    return conn.execute(delete(schema.console_session).where(SESSION.expires_us <= now_us)).rowcount


def _verify(password_hash: str, password: str) -> bool:
    try:
        return HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def session_operator(conn: Connection, token: str, now_us: int) -> Operator | None:
    """The operator of a live console session, or None."""
    row = (
        conn.execute(
            select(schema.operator)
            .join(schema.console_session, SESSION.operator == OPERATOR.code)
            .where(SESSION.token_hash == token_hash(token), SESSION.expires_us > now_us)
        )
        .mappings()
        .first()
    )
    if row is None or row["disabled"]:
        return None
    return operator_from_row(row)


def end_session(conn: Connection, token: str) -> None:
    conn.execute(delete(schema.console_session).where(SESSION.token_hash == token_hash(token)))


def end_sessions(conn: Connection, code: str) -> int:
    """End every console session of operator ``code``; how many."""
    return conn.execute(delete(schema.console_session).where(SESSION.operator == code)).rowcount
