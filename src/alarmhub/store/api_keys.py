"""Keys of the integrator API in the store: made (the key returned once), listed, revoked,
found again from the key a request presents, and their last use recorded (at most once a
minute a key: :class:`Uses`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from alarmhub.core.api_keys import KEY_PATTERN, ApiKey, key_hash, key_problem, new_key
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import schema

KEY = schema.api_key.c
USE_RECORDED_EVERY_US = 60_000_000
"""A key's ``last_used`` is at most this old while the key is in use (a write a minute, not
one a request)."""


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


def record_use(conn: Connection, name: str, now_us: int) -> None:
    """The key ``name`` was used at ``now_us``: written unless another process wrote a use
    of it within the minute."""
    conn.execute(
        update(schema.api_key)
        .where(
            KEY.name == name,
            or_(KEY.last_used_us.is_(None), KEY.last_used_us <= now_us - USE_RECORDED_EVERY_US),
        )
        .values(last_used_us=now_us)
    )


class Uses:
    """A process's memory of when it last recorded each key's use: :meth:`due` says whether
    this use is to be written (the first, then one a minute)."""

    def __init__(self) -> None:
        self._written: dict[str, int] = {}

    def due(self, name: str, now_us: int) -> bool:
        last = self._written.get(name)
        if last is not None and now_us - last < USE_RECORDED_EVERY_US:
            return False
        self._written[name] = now_us
        return True
