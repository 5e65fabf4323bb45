"""The station's operators: adding and listing them, loading one for an action, and their
passwords' hashes."""

from __future__ import annotations

from typing import Any

from argon2 import PasswordHasher
from sqlalchemy import Connection, func, insert, select
from sqlalchemy.engine import Engine

from alarmhub import clock
from alarmhub.core import operations as ops
from alarmhub.core.errors import ActionRefused, ProvisioningError
from alarmhub.core.operations import AlarmState, Operator, Role
from alarmhub.store import schema
from alarmhub.store.engine import write_transaction

HASHER = PasswordHasher()
"""Hashes operators' passwords (Argon2) and checks them at sign-in."""
ALARM = schema.alarm.c
OPERATOR = schema.operator.c


def hash_password(password: str) -> str:
    problem = ops.password_problem(password)
    if problem:
        raise ProvisioningError(problem)
    return HASHER.hash(password)


def add_operator(
    engine: Engine, code: str, name: str, role: str = Role.OPERATOR, password: str | None = None
) -> dict[str, Any]:
    problem = ops.operator_code_problem(code)
    if problem:
        raise ProvisioningError(problem)
    if not name.strip() or len(name) > 64:
        raise ProvisioningError("operator name must be 1-64 characters")
    if role not in {r.value for r in Role}:
        raise ProvisioningError(f"invalid role {role!r}: use operator, supervisor or admin")
    password_hash = hash_password(password) if password is not None else None
    with write_transaction(engine) as conn:
        if conn.execute(select(OPERATOR.code).where(OPERATOR.code == code)).first():
            raise ProvisioningError(f"operator {code!r} already exists")
        created = clock.now_us()
        conn.execute(
            insert(schema.operator).values(
                code=code,
                name=name.strip(),
                role=role,
                password_hash=password_hash,
                disabled=False,
                created_us=created,
                receiving=False,
                failed_logins=0,  # of the old lock-out: kept in the schema, no longer used
            )
        )
    return {"code": code, "name": name.strip(), "role": role, "created_us": created}


def list_operators(conn: Connection) -> list[dict[str, Any]]:
    """Every operator with status, without password hashes."""
    in_process = (
        select(func.count())
        .where(ALARM.opr == OPERATOR.code, ALARM.state == AlarmState.IN_PROCESS)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(
            OPERATOR.code,
            OPERATOR.name,
            OPERATOR.role,
            OPERATOR.disabled,
            OPERATOR.created_us,
            OPERATOR.signed_on_us,
            OPERATOR.receiving,
            OPERATOR.status_us,
            (OPERATOR.password_hash.is_not(None)).label("has_password"),
            in_process.label("in_process"),
        ).order_by(OPERATOR.code)
    ).mappings()
    return [dict(r) for r in rows]


def load_operator(conn: Connection, code: str) -> Operator:
    row = conn.execute(select(schema.operator).where(OPERATOR.code == code)).mappings().first()
    if row is None:
        raise ActionRefused("OPS-OPERATOR", f"operator {code!r} does not exist", 404)
    return operator_from_row(row)


def operator_from_row(row: Any) -> Operator:
    return Operator(
        code=row["code"],
        name=row["name"],
        role=Role(row["role"]),
        disabled=bool(row["disabled"]),
        signed_on=row["signed_on_us"] is not None,
        receiving=bool(row["receiving"]),
    )
