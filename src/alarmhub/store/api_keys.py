"""Keys of the integrator API in the store: made (the key returned once), listed, revoked, and
found again from the key a request presents."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from alarmhub.core.api_keys import KEY_PATTERN, ApiKey, key_hash, key_problem, new_key
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import schema

KEY = schema.api_key.c


def create(conn: Connection, name: str, scopes: tuple[str, ...], accounts: str, now_us: int) -> str:
    """Make a key; the key itself (only its hash is kept)."""
    scopes = tuple(dict.fromkeys(scopes))
    problem = key_problem(name, scopes, accounts)
    if problem:
        raise ProvisioningError(problem)
    key = new_key()
    values = {"name": name, "secret_hash": key_hash(key), "scopes": " ".join(scopes),
              "accounts": accounts, "created_us": now_us}  # fmt: skip
    try:
        with conn.begin_nested():
            conn.execute(insert(schema.api_key).values(values))
    except IntegrityError:
        raise ProvisioningError(f"an API key named {name!r} exists already") from None
    return key


def listed(conn: Connection) -> list[dict[str, Any]]:
    """Every key, newest first, without its hash."""
    columns = (KEY.name, KEY.scopes, KEY.accounts, KEY.created_us, KEY.revoked_us, KEY.last_used_us)
    rows = conn.execute(select(*columns).order_by(KEY.key_id.desc())).mappings()
    return [{**r, "scopes": r["scopes"].split()} for r in rows]


def valid_names(conn: Connection, names: set[str]) -> set[str]:
    """Those of ``names`` that are keys not revoked."""
    if not names:
        return set()
    found = select(KEY.name).where(KEY.name.in_(names), KEY.revoked_us.is_(None))
    return set(conn.execute(found).scalars())


def revoke(conn: Connection, name: str, now_us: int) -> None:
    done = conn.execute(
        update(schema.api_key)
        .where(KEY.name == name, KEY.revoked_us.is_(None))
        .values(revoked_us=now_us)
    )
    if not done.rowcount:
        raise ProvisioningError(f"no API key named {name!r} (or it is revoked already)")


def authenticate(conn: Connection, key: str) -> ApiKey | None:
    """The key a request presents, if it is one the station made and has not revoked."""
    if not KEY_PATTERN.fullmatch(key):
        return None
    row = conn.execute(
        select(KEY.name, KEY.scopes, KEY.accounts).where(
            KEY.secret_hash == key_hash(key), KEY.revoked_us.is_(None)
        )
    ).first()
    if row is None:
        return None
    return ApiKey(row.name, frozenset(row.scopes.split()), row.accounts)
