"""Provisioning data: drivers, bearer tokens, dnis lines and accounts (used by CLI and server)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub import secret_key
from alarmhub.clock import now_us
from alarmhub.contactid import EVENTS
from alarmhub.core import tokens
from alarmhub.core.account import Account, account_problem
from alarmhub.core.alarm_types import DEFAULTS, AlarmType, alarm_type_problem, with_changes
from alarmhub.core.errors import ProvisioningError, SecretKeyError
from alarmhub.core.line_mask import mask_problem
from alarmhub.core.signal import valid_dnis
from alarmhub.store import schema
from alarmhub.store.engine import write_transaction
from alarmhub.store.prepared import Prepared

ACCOUNT = schema.account.c
API_USER = schema.api_user.c

PROVISIONING = "provisioning"
TEST_INTERVAL_MAX_S = 366 * 24 * 3600


_BUMP = Prepared(
    update(schema.revision)
    .where(schema.revision.c.name == bindparam("revision_name"))
    .values(value=schema.revision.c.value + 1)
)
_REVISION = select(schema.revision.c.value).where(
    schema.revision.c.name == bindparam("revision_name")
)


def bump_revision(conn: Connection, name: str = PROVISIONING) -> None:
    """Tell running servers that provisioning data (or, by name, the alarm queues) changed: they
    watch the revision row; on PostgreSQL the change is also announced to listeners on
    ``notify_channel(name)`` when the transaction commits."""
    if not _BUMP.execute(conn, {"revision_name": name}):
        conn.execute(insert(schema.revision).values(name=name, value=1))
    if conn.dialect.name == "postgresql":  # several notifications of one transaction are one
        conn.exec_driver_sql(f"NOTIFY {notify_channel(name)}")


def notify_channel(name: str) -> str:
    """The PostgreSQL notification channel of a revision row."""
    return f"alarmhub_{name}"


def revision(conn: Connection, name: str = PROVISIONING) -> int:
    value = conn.execute(_REVISION, {"revision_name": name}).scalar()
    return int(value or 0)


# drivers -------------------------------------------------------------------------------------


def add_driver(engine: Engine, name: str) -> dict[str, Any]:
    if not tokens.valid_name(name):
        raise ProvisioningError(
            f"invalid driver name {name!r}: use 1-64 letters, digits, '_', '.', '-'"
        )
    with write_transaction(engine) as conn:
        if conn.execute(select(schema.driver.c.name).where(schema.driver.c.name == name)).first():
            raise ProvisioningError(f"driver {name!r} already exists")
        created = now_us()
        conn.execute(insert(schema.driver).values(name=name, created_us=created))
        bump_revision(conn)
    return {"name": name, "created_us": created}


def list_drivers(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(select(schema.driver).order_by(schema.driver.c.name)).mappings()
        return [dict(r) for r in rows]


def driver_names(conn: Connection) -> frozenset[str]:
    return frozenset(conn.execute(select(schema.driver.c.name)).scalars())


# tokens --------------------------------------------------------------------------------------


def _parse_pair(pair: str) -> tuple[str, str]:
    split = tokens.split_pair(pair)
    if split is None:
        raise ProvisioningError(f"invalid heartbeat pair {pair!r}: expected SOURCE:DESTINATION")
    return split


def create_token(
    engine: Engine, name: str, drivers: Sequence[str] = (), pairs: Sequence[str] = ()
) -> str:
    """Create a token and return it: the only time it is ever shown."""
    if not tokens.valid_name(name):
        raise ProvisioningError(
            f"invalid token name {name!r}: use 1-64 letters, digits, '_', '.', '-'"
        )
    parsed_pairs = sorted({_parse_pair(p) for p in pairs})
    secret = tokens.new_token()
    with write_transaction(engine) as conn:
        if conn.execute(select(schema.token.c.name).where(schema.token.c.name == name)).first():
            raise ProvisioningError(f"token {name!r} already exists")
        known = driver_names(conn)
        for driver in drivers:
            if driver not in known:
                raise ProvisioningError(f"unknown driver {driver!r} (add it with 'driver add')")
        conn.execute(
            insert(schema.token).values(
                name=name, token_hash=tokens.token_hash(secret), created_us=now_us()
            )
        )
        if drivers:
            conn.execute(
                insert(schema.token_driver),
                [{"token_name": name, "driver_name": d} for d in sorted(set(drivers))],
            )
        if parsed_pairs:
            conn.execute(
                insert(schema.token_heartbeat),
                [{"token_name": name, "source": a, "destination": b} for a, b in parsed_pairs],
            )
        bump_revision(conn)
    return secret


def list_tokens(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        grants = _grants(conn, include_revoked=True)
        rows = conn.execute(select(schema.token).order_by(schema.token.c.name)).mappings().all()
    result = []
    for row in rows:
        grant = grants[row["name"]]
        result.append(
            {
                "name": row["name"],
                "drivers": sorted(grant.drivers),
                "heartbeat": sorted(f"{a}:{b}" for a, b in grant.pairs),
                "created_us": row["created_us"],
                "revoked_us": row["revoked_us"],
            }
        )
    return result


def revoke_token(engine: Engine, name: str) -> None:
    with write_transaction(engine) as conn:
        row = conn.execute(
            select(schema.token.c.revoked_us).where(schema.token.c.name == name)
        ).first()
        if row is None:
            raise ProvisioningError(f"no token named {name!r}")
        if row.revoked_us is not None:
            raise ProvisioningError(f"token {name!r} is already revoked")
        conn.execute(
            update(schema.token).where(schema.token.c.name == name).values(revoked_us=now_us())
        )
        bump_revision(conn)


def _grants(conn: Connection, include_revoked: bool = False) -> dict[str, tokens.Grant]:
    query = select(schema.token.c.name)
    if not include_revoked:
        query = query.where(schema.token.c.revoked_us.is_(None))
    names = set(conn.execute(query).scalars())
    drivers: dict[str, set[str]] = {n: set() for n in names}
    pairs: dict[str, set[tuple[str, str]]] = {n: set() for n in names}
    for token_name, driver in conn.execute(select(schema.token_driver)):
        if token_name in drivers:
            drivers[token_name].add(driver)
    for token_name, source, destination in conn.execute(select(schema.token_heartbeat)):
        if token_name in pairs:
            pairs[token_name].add((source, destination))
    return {
        n: tokens.Grant(name=n, drivers=frozenset(drivers[n]), pairs=frozenset(pairs[n]))
        for n in names
    }


def active_grants(conn: Connection) -> dict[str, tokens.Grant]:
    """Every unrevoked token's grant, keyed by the token's hash."""
    hashes = {
        name: digest
        for name, digest in conn.execute(
            select(schema.token.c.name, schema.token.c.token_hash).where(
                schema.token.c.revoked_us.is_(None)
            )
        )
    }
    grants = _grants(conn)
    return {hashes[name]: grant for name, grant in grants.items()}


# dnis lines ----------------------------------------------------------------------------------


def add_dnis(engine: Engine, dnis: str, mask: str) -> dict[str, Any]:
    if not valid_dnis(dnis):
        raise ProvisioningError(
            f"invalid dnis {dnis!r}: must be 1-5 letters or digits, not all zeros"
        )
    problem = mask_problem(mask)
    if problem:
        raise ProvisioningError(f"invalid mask {mask!r}: {problem}")
    with write_transaction(engine) as conn:
        if conn.execute(select(schema.dnis.c.dnis).where(schema.dnis.c.dnis == dnis)).first():
            raise ProvisioningError(f"dnis {dnis!r} already exists")
        created = now_us()
        conn.execute(insert(schema.dnis).values(dnis=dnis, line_mask=mask, created_us=created))
        bump_revision(conn)
    return {"dnis": dnis, "line_mask": mask, "created_us": created}


def list_dnis(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [
            dict(r)
            for r in conn.execute(select(schema.dnis).order_by(schema.dnis.c.dnis)).mappings()
        ]


# accounts ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportCount:
    added: int
    updated: int


def add_account(engine: Engine, account: Account) -> dict[str, Any]:
    with write_transaction(engine) as conn:
        return add_account_in(conn, account)


def add_account_in(conn: Connection, account: Account) -> dict[str, Any]:
    """Add an account in the caller's transaction (refused when its number exists)."""
    checked_account(account)
    number = account.account_number
    if conn.execute(select(ACCOUNT.account_number).where(ACCOUNT.account_number == number)).first():
        raise ProvisioningError(f"account {number!r} already exists")
    now = now_us()
    conn.execute(
        insert(schema.account).values(
            {**account_values(account), "created_us": now, "updated_us": now}
        )
    )
    bump_revision(conn)
    return account_values(account)


def checked_account(account: Account) -> None:
    problem = account_problem(account)
    if problem:
        raise ProvisioningError(f"invalid account {account.account_number!r}: {problem}")


def account_values(account: Account) -> dict[str, str]:
    return {
        "account_number": account.account_number,
        "company_name": account.company_name,
        "street": account.street,
        "city": account.city,
        "state": account.state,
    }


def upsert_accounts(engine: Engine, accounts: Iterable[Account]) -> ImportCount:
    """Add new accounts and update existing ones, in one transaction (valid accounts only)."""
    batch = list({a.account_number: a for a in accounts}.values())  # the last row wins
    added = updated = 0
    with write_transaction(engine) as conn:
        numbers = [a.account_number for a in batch]
        existing: set[str] = set()
        for start in range(0, len(numbers), 500):
            chunk = numbers[start : start + 500]
            existing.update(
                conn.execute(
                    select(ACCOUNT.account_number).where(ACCOUNT.account_number.in_(chunk))
                ).scalars()
            )
        now = now_us()
        new_rows = [
            {**account_values(a), "created_us": now, "updated_us": now}
            for a in batch
            if a.account_number not in existing
        ]
        if new_rows:
            conn.execute(insert(schema.account), new_rows)
            added = len(new_rows)
        for a in batch:
            if a.account_number in existing:
                values = account_values(a)
                conn.execute(
                    update(schema.account)
                    .where(ACCOUNT.account_number == a.account_number)
                    .values({**values, "updated_us": now})
                )
                updated += 1
        bump_revision(conn)
    return ImportCount(added=added, updated=updated)


def list_accounts(engine: Engine, limit: int | None = None) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        query = select(schema.account).order_by(ACCOUNT.account_number)
        if limit:
            query = query.limit(limit)
        return [dict(r) for r in conn.execute(query).mappings()]


def set_test_interval(engine: Engine, account_number: str, interval_s: int | None) -> None:
    with write_transaction(engine) as conn:
        set_test_interval_in(conn, account_number, interval_s)


def set_test_interval_in(conn: Connection, account_number: str, interval_s: int | None) -> None:
    """Expect a periodic test report (E602) from an account every ``interval_s`` seconds, or no
    longer (None). Setting an interval starts its clock now."""
    if interval_s is not None and not 0 < interval_s <= TEST_INTERVAL_MAX_S:
        raise ProvisioningError("the test interval must be positive and at most a year")
    values: dict[str, Any] = {"test_interval_s": interval_s, "updated_us": now_us()}
    if interval_s is not None:
        values["last_test_us"] = now_us()
    changed = conn.execute(
        update(schema.account).where(ACCOUNT.account_number == account_number).values(values)
    ).rowcount
    if not changed:
        raise ProvisioningError(f"no account {account_number!r}")
    bump_revision(conn)


# alarm types ---------------------------------------------------------------------------------


def alarm_type_overrides(conn: Connection) -> dict[str, AlarmType]:
    rows = conn.execute(select(schema.alarm_type)).mappings()
    return {
        row["code"]: AlarmType(
            code=row["code"],
            type=row["type"],
            restore_type=row["restore_type"],
            priority=row["priority"],
            color=row["color"],
            category=row["category"],
            restore_expected=bool(row["restore_expected"]),
            hist_text=row["hist_text"],
            contact_list=row["contact_list"] or "",
        )
        for row in rows
    }


def list_alarm_types(engine: Engine) -> list[dict[str, Any]]:
    """Every alarm type in effect, each marked as shipped default or station override."""
    with engine.connect() as conn:
        overrides = alarm_type_overrides(conn)
    rows = []
    for code in sorted({**DEFAULTS, **overrides}):
        alarm_type = overrides.get(code) or DEFAULTS[code]
        rows.append({**asdict(alarm_type), "overridden": code in overrides})
    return rows


def set_alarm_type(engine: Engine, code: str, **changes: Any) -> dict[str, Any]:
    """Override fields of the alarm type of event ``code``; the rest keep their current value."""
    if code not in EVENTS:
        raise ProvisioningError(f"{code!r} is not a Contact ID event code (three digits)")
    with write_transaction(engine) as conn:
        current = alarm_type_overrides(conn).get(code) or DEFAULTS[code]
        updated = with_changes(current, **{k: v for k, v in changes.items() if v is not None})
        problem = alarm_type_problem(updated)
        if problem:
            raise ProvisioningError(f"alarm type {code}: {problem}")
        values = {**asdict(updated), "updated_us": now_us()}
        conn.execute(delete(schema.alarm_type).where(schema.alarm_type.c.code == code))
        conn.execute(insert(schema.alarm_type).values(values))
        bump_revision(conn)
    return asdict(updated)


def reset_alarm_type(engine: Engine, code: str) -> None:
    """Drop the station's override of ``code``: the shipped default applies again."""
    with write_transaction(engine) as conn:
        if not conn.execute(
            delete(schema.alarm_type).where(schema.alarm_type.c.code == code)
        ).rowcount:
            raise ProvisioningError(f"alarm type {code} has no override")
        bump_revision(conn)


# query interface users -----------------------------------------------------------------------

API_PASSWORD_BYTES = 24
API_PASSWORD_MIN = 12


def add_api_user(
    engine: Engine, key: Fernet, username: str, password: str | None, hmac_only: bool
) -> str:
    """Create an API user of the query interface; the password (generated when not given) is
    stored encrypted with the station's key and returned once."""
    if not tokens.valid_name(username):
        raise ProvisioningError(
            f"invalid username {username!r}: use 1-64 letters, digits, '_', '.', '-'"
        )
    if password is None:
        password = secrets.token_urlsafe(API_PASSWORD_BYTES)
    elif len(password) < API_PASSWORD_MIN or not password.isprintable():
        raise ProvisioningError(
            f"the password must be at least {API_PASSWORD_MIN} printable characters"
        )
    with write_transaction(engine) as conn:
        if conn.execute(select(API_USER.username).where(API_USER.username == username)).first():
            raise ProvisioningError(f"API user {username!r} already exists")
        conn.execute(
            insert(schema.api_user).values(
                username=username,
                password_encrypted=secret_key.encrypt(key, password),
                hmac_only=hmac_only,
                created_us=now_us(),
            )
        )
        bump_revision(conn)
    return password


def list_api_users(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(API_USER.username, API_USER.hmac_only, API_USER.created_us).order_by(
                API_USER.username
            )
        ).mappings()
        return [dict(r) for r in rows]


def remove_api_user(engine: Engine, username: str) -> None:
    with write_transaction(engine) as conn:
        if not conn.execute(delete(schema.api_user).where(API_USER.username == username)).rowcount:
            raise ProvisioningError(f"no API user {username!r}")
        bump_revision(conn)


@dataclass(frozen=True, slots=True)
class ApiUser:
    """An API user as the query interface checks it: the password in clear, in memory only."""

    username: str
    password: str
    hmac_only: bool


def api_users(conn: Connection, key: Fernet) -> tuple[dict[str, ApiUser], list[str]]:
    """Every API user with its password decrypted, for digest checks; and the names of those
    whose password cannot be decrypted with ``key`` (encrypted with another station's key, or
    damaged): those users cannot sign a request, the others are not affected."""
    users: dict[str, ApiUser] = {}
    unreadable: list[str] = []
    for row in conn.execute(select(schema.api_user)).mappings():
        try:
            password = secret_key.decrypt(key, row["password_encrypted"])
        except (SecretKeyError, ValueError):
            unreadable.append(row["username"])
            continue
        users[row["username"]] = ApiUser(row["username"], password, bool(row["hmac_only"]))
    return users, unreadable
