"""An operator's access changed by an administrator: disabled or enabled, or a new password.
Both end the operator's console sessions and sign them off, so that their alarms in process go
back to pending."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.engine import Engine

from alarmhub import clock
from alarmhub.store import provisioning, queries, schema
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import write_transaction
from alarmhub.store.handling import sign_off
from alarmhub.store.operators import OPERATOR, hash_password, load_operator
from alarmhub.store.sessions import end_sessions


def set_disabled(engine: Engine, code: str, disabled: bool, now_us: int) -> None:
    """Disable (signs the operator off, ends their sessions, returns their alarms to pending)
    or enable an operator."""
    with write_transaction(engine) as conn:
        lock_incidents(conn)  # it may change the queues: the order of operations.on_queues
        operator = load_operator(conn, code)
        if disabled and operator.signed_on:
            sign_off(conn, code, now_us)
        if disabled:
            end_sessions(conn, code)
        conn.execute(update(schema.operator).where(OPERATOR.code == code).values(disabled=disabled))
        provisioning.bump_revision(conn, queries.QUEUE)


def set_password(engine: Engine, code: str, password: str, now_us: int | None = None) -> int:
    """Set an operator's password. Their console sessions end (an old cookie no longer
    works) and, when signed on, they are signed off: their alarms in process go back to
    pending, never left with a console that is gone. How many sessions ended."""
    password_hash = hash_password(password)
    now = now_us if now_us is not None else clock.now_us()
    with write_transaction(engine) as conn:
        lock_incidents(conn)  # it may change the queues: the order of operations.on_queues
        operator = load_operator(conn, code)
        conn.execute(
            update(schema.operator).where(OPERATOR.code == code).values(password_hash=password_hash)
        )
        ended = end_sessions(conn, code)
        if operator.signed_on:
            sign_off(conn, code, now)
    return ended
