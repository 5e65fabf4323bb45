"""An account's response data in the store (decisions section 7): zones, panel users, agencies,
the account's permit and duress code; what routing, the console and XMAPEND read of it. Contacts
and their call lists are :mod:`alarmhub.store.contacts`.

Every change bumps the ``response`` revision, so the answers cached per state (XMAPEND) see it.
Passcodes arrive here already hashed (Argon2): the store never sees one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, delete, select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import response as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import Agency, PanelUser, Zone
from alarmhub.store import alarm_response, schema
from alarmhub.store.alarm_response import (
    ACCOUNT,
    AGENCY,
    RESPONSE,
    USER,
    ZONE,
    chunks,
)
from alarmhub.store.engine import dialect_insert, write_transaction
from alarmhub.store.operators import HASHER
from alarmhub.store.provisioning import bump_revision

ZONE_KEY = ["account_number", "zone", "area"]
USER_KEY = ["account_number", "user_number"]
CONTACT_KEY = ["account_number", "name"]
ENTRY_KEY = ["account_number", "list_name", "contact_id"]


def upsert(
    conn: Connection,
    table: Table,
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    changes: Callable[[Any], Mapping[str, Any]] | None = None,
) -> None:
    """INSERT ... ON CONFLICT (keys) DO UPDATE: one statement for many rows, on both dialects:
    a row whose key exists is changed, the others are added. ``changes``, given the proposed
    row (``excluded``), says what an existing row's columns become (default: every column of
    the new row but the keys)."""
    if not rows:
        return
    statement = dialect_insert(conn)(table)
    if changes is None:
        changed = {c: statement.excluded[c] for c in rows[0] if c not in keys}
    else:
        changed = dict(changes(statement.excluded))
    if changed:
        statement = statement.on_conflict_do_update(index_elements=keys, set_=changed)
    else:
        statement = statement.on_conflict_do_nothing(index_elements=keys)
    for chunk in chunks(rows):
        conn.execute(statement, list(chunk))


def known_accounts(conn: Connection, numbers: Iterable[str]) -> set[str]:
    """Which of ``numbers`` are accounts."""
    wanted = sorted(set(numbers))
    found: set[str] = set()
    for chunk in chunks(wanted):
        found.update(
            conn.execute(
                select(ACCOUNT.account_number).where(ACCOUNT.account_number.in_(chunk))
            ).scalars()
        )
    return found


def need_account(conn: Connection, number: str) -> None:
    if not known_accounts(conn, [number]):
        raise ProvisioningError(f"no account {number!r}")


def hash_passcode(passcode: str) -> str:
    """The Argon2 hash of a passcode or duress code, the only form the store keeps."""
    checked(rules.passcode_problem(passcode))
    return HASHER.hash(passcode)


async def hash_passcode_in_thread(passcode: str) -> str:
    """:func:`hash_passcode` in a worker thread, as every Argon2 hash made for a request must
    be: about 0.1 s of CPU on the event loop holds every other request of the process."""
    return await asyncio.to_thread(hash_passcode, passcode)


def checked(problem: str | None) -> None:
    if problem:
        raise ProvisioningError(problem)


# zones and panel users -----------------------------------------------------------------------


def zone_values(zone: Zone) -> dict[str, str]:
    return {
        "account_number": zone.account_number,
        "zone": rules.three_digits(zone.zone),
        "area": rules.two_digits(zone.area),
        "description": zone.description.strip(),
        "equipment": zone.equipment.strip(),
    }


def set_zone(engine: Engine, zone: Zone) -> dict[str, str]:
    with write_transaction(engine) as conn:
        return set_zone_in(conn, zone)


def set_zone_in(conn: Connection, zone: Zone) -> dict[str, str]:
    """Add or change what a zone is (in one area, or with no area in every area)."""
    checked(rules.zone_problem(zone))
    return _set_row(conn, schema.account_zone, ZONE_KEY, zone_values(zone))


def _set_row(
    conn: Connection, table: Table, keys: list[str], values: dict[str, str]
) -> dict[str, str]:
    """Add or change one row of an account's data, keyed by ``keys``."""
    need_account(conn, values["account_number"])
    upsert(conn, table, [values], keys)
    bump_revision(conn, RESPONSE)
    return values


def list_zones(engine: Engine, account_number: str) -> list[dict[str, str]]:
    with engine.connect() as conn:
        return zones_of(conn, account_number)


def zones_of(conn: Connection, account_number: str) -> list[dict[str, str]]:
    need_account(conn, account_number)
    rows = conn.execute(
        select(ZONE.zone, ZONE.area, ZONE.description, ZONE.equipment)
        .where(ZONE.account_number == account_number)
        .order_by(ZONE.zone, ZONE.area)
    ).mappings()
    return [alarm_response.plain(r) for r in rows]


def remove_zone(engine: Engine, account_number: str, zone: str, area: str = "") -> None:
    with write_transaction(engine) as conn:
        remove_zone_in(conn, account_number, zone, area)


def remove_zone_in(conn: Connection, account_number: str, zone: str, area: str = "") -> None:
    checked(rules.number_problem(zone) or rules.area_problem(area))
    gone = conn.execute(
        delete(schema.account_zone).where(
            ZONE.account_number == account_number,
            ZONE.zone == rules.three_digits(zone),
            ZONE.area == rules.two_digits(area),
        )
    ).rowcount
    if not gone:
        where = f" area {rules.two_digits(area)}" if area else ""
        raise ProvisioningError(f"account {account_number!r} has no zone {zone}{where}")
    bump_revision(conn, RESPONSE)


def user_values(user: PanelUser) -> dict[str, str]:
    return {
        "account_number": user.account_number,
        "user_number": rules.three_digits(user.user),
        "name": user.name.strip(),
    }


def set_user(engine: Engine, user: PanelUser) -> dict[str, str]:
    with write_transaction(engine) as conn:
        return set_user_in(conn, user)


def set_user_in(conn: Connection, user: PanelUser) -> dict[str, str]:
    checked(rules.user_problem(user))
    return _set_row(conn, schema.account_user, USER_KEY, user_values(user))


def list_users(engine: Engine, account_number: str) -> list[dict[str, str]]:
    with engine.connect() as conn:
        return users_of(conn, account_number)


def users_of(conn: Connection, account_number: str) -> list[dict[str, str]]:
    need_account(conn, account_number)
    rows = conn.execute(
        select(USER.user_number.label("user"), USER.name)
        .where(USER.account_number == account_number)
        .order_by(USER.user_number)
    ).mappings()
    return [alarm_response.plain(r) for r in rows]


def remove_user(engine: Engine, account_number: str, user: str) -> None:
    with write_transaction(engine) as conn:
        remove_user_in(conn, account_number, user)


def remove_user_in(conn: Connection, account_number: str, user: str) -> None:
    checked(rules.number_problem(user, "user"))
    gone = conn.execute(
        delete(schema.account_user).where(
            USER.account_number == account_number,
            USER.user_number == rules.three_digits(user),
        )
    ).rowcount
    if not gone:
        raise ProvisioningError(f"account {account_number!r} has no user {user}")
    bump_revision(conn, RESPONSE)


# agencies, permit and duress code --------------------------------------------------------------


def add_agency(engine: Engine, agency: Agency) -> dict[str, str]:
    """Add a dispatch point, or change the one with that code."""
    checked(rules.agency_problem(agency))
    values = {
        "code": agency.code,
        "kind": agency.kind.value,
        "name": agency.name.strip(),
        "phone": agency.phone.strip(),
    }
    with write_transaction(engine) as conn:
        upsert(conn, schema.agency, [{**values, "updated_us": now_us()}], ["code"])
        bump_revision(conn, RESPONSE)
    return values


def list_agencies(engine: Engine) -> list[dict[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(AGENCY.code, AGENCY.kind, AGENCY.name, AGENCY.phone).order_by(
                AGENCY.kind, AGENCY.code
            )
        ).mappings()
        return [alarm_response.plain(r) for r in rows]


def set_account_response(
    engine: Engine,
    account_number: str,
    agencies: Mapping[str, str | None],
    permit: str | None = None,
    duress_hash: str | None = None,
    clear_duress: bool = False,
    phone: str | None = None,
) -> dict[str, Any]:
    with write_transaction(engine) as conn:
        return set_account_response_in(
            conn, account_number, agencies, permit, duress_hash, clear_duress, phone
        )


def set_account_response_in(
    conn: Connection,
    account_number: str,
    agencies: Mapping[str, str | None],
    permit: str | None = None,
    duress_hash: str | None = None,
    clear_duress: bool = False,
    phone: str | None = None,
) -> dict[str, Any]:
    """Assign agencies (by kind: police, fire, medical; ``""`` unassigns), the permit, the
    duress code's hash and the premises phone (``""`` clears it) to an account."""
    values: dict[str, Any] = {}
    need_account(conn, account_number)
    for kind, code in agencies.items():
        if code is None:
            continue
        if code:
            known = code.isascii() and code.isprintable()  # (PostgreSQL refuses a NUL)
            found = (
                conn.execute(select(AGENCY.kind).where(AGENCY.code == code)).scalar()
                if known
                else None
            )
            checked(rules.assignment_problem(kind, code, found))
        values[kind] = code or None
    if permit is not None:
        checked(rules.permit_problem(permit))
        values["permit"] = permit.strip() or None
    if duress_hash is not None or clear_duress:
        values["duress_hash"] = duress_hash
    if phone is not None:
        checked(rules.phone_problem(phone) if phone.strip() else None)
        values["phone"] = phone.strip() or None
    if values:
        conn.execute(
            update(schema.account)
            .where(ACCOUNT.account_number == account_number)
            .values({**values, "updated_us": now_us()})
        )
        bump_revision(conn, RESPONSE)
    return alarm_response.account_response(conn, account_number)
