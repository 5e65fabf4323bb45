"""An account's life in the store beyond its creation (``provisioning.add_account_in``): read one
or a range of them, replace its name and address, remove it with what hangs on it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.account import Account
from alarmhub.core.errors import ActionRefused, ProvisioningError
from alarmhub.store import schema
from alarmhub.store.alarm_response import RESPONSE
from alarmhub.store.engine import write_transaction
from alarmhub.store.plans import PLANS
from alarmhub.store.provisioning import (
    ACCOUNT,
    PROVISIONING,
    account_values,
    bump_revision,
    checked_account,
)
from alarmhub.store.queries import starts_with


def account_row(conn: Connection, number: str) -> dict[str, Any] | None:
    """An account's row, or None."""
    row = conn.execute(select(schema.account).where(ACCOUNT.account_number == number)).first()
    return dict(row._mapping) if row is not None else None


def accounts_after(conn: Connection, prefix: str, after: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` accounts whose number starts with ``prefix``, after ``after``, in order."""
    query = select(schema.account).where(ACCOUNT.account_number > after)
    if prefix:
        query = query.where(starts_with(ACCOUNT.account_number, prefix))
    rows = conn.execute(query.order_by(ACCOUNT.account_number).limit(limit)).mappings()
    return [dict(r) for r in rows]


def remove_account(engine: Engine, number: str) -> None:
    with write_transaction(engine) as conn:
        remove_account_in(conn, number)


def remove_account_in(conn: Connection, number: str) -> None:
    """Remove an account with its response data, schedules, holidays and action plans (its
    history stays); refused while it has an open alarm."""
    if account_row(conn, number) is None:
        raise ProvisioningError(f"no account {number!r}")
    open_alarms = conn.execute(
        select(func.count())
        .select_from(schema.alarm)
        .where(schema.alarm.c.account_number == number, schema.alarm.c.state != "resolved")
    ).scalar_one()
    if open_alarms:
        raise ActionRefused(
            "ACCOUNT-OPEN-ALARMS",
            f"account {number!r} has {open_alarms} open alarm(s): resolve them first",
        )
    for table in (
        schema.call_list_entry,
        schema.contact,
        schema.account_zone,
        schema.account_user,
        schema.schedule_window,
        schema.schedule,
        schema.holiday,
        schema.plan_step,
        schema.account,
    ):
        conn.execute(delete(table).where(table.c.account_number == number))
    for name in (PROVISIONING, RESPONSE, PLANS):
        bump_revision(conn, name)


def replace_account_in(conn: Connection, account: Account) -> dict[str, Any]:
    """Change an existing account's name and address in the caller's transaction."""
    checked_account(account)
    changed = conn.execute(
        update(schema.account)
        .where(ACCOUNT.account_number == account.account_number)
        .values({**account_values(account), "updated_us": now_us()})
    ).rowcount
    if not changed:
        raise ProvisioningError(f"no account {account.account_number!r}")
    bump_revision(conn)
    return account_values(account)
