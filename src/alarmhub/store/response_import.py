"""Response data in bulk: zones, panel users and contacts added or updated a chunk of rows at a
time, each chunk in one transaction, so that an import of a whole station's data keeps its
memory flat and a second import of the same file changes nothing.

Each row is keyed: a zone by (account, zone, area), a user by (account, user number), a contact
by (account, name). A row whose key exists updates it; a row for an unknown account is refused
with its line number; the other rows of its chunk are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.response import Contact, PanelUser, Zone
from alarmhub.store import schema
from alarmhub.store.alarm_response import ACCOUNT, CONTACT, PHONE_COLUMNS, RESPONSE, chunks
from alarmhub.store.contacts import Placement, contact_values, place_all
from alarmhub.store.engine import write_transaction
from alarmhub.store.provisioning import bump_revision
from alarmhub.store.response import (
    CONTACT_KEY,
    USER_KEY,
    ZONE_KEY,
    known_accounts,
    upsert,
    user_values,
    zone_values,
)

TABLES = {
    "account": ("account",),
    "zone": ("account_zone",),
    "user": ("account_user",),
    "contact": ("contact", "call_list_entry"),
}
"""The tables each kind of import fills."""


def refresh_statistics(engine: Engine, kind: str) -> None:
    """Let PostgreSQL's planner see how large the tables an import fills have grown (ANALYZE):
    while it believes them small it reads them whole to find a chunk's rows, and an import
    slows down with every chunk. SQLite needs nothing."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect() as conn:
        for table in TABLES.get(kind, ()):
            conn.exec_driver_sql(f"ANALYZE {table}")
        conn.commit()


@dataclass(slots=True)
class Outcome:
    """What an import of some rows did: rows added, rows updated, rows refused (by line)."""

    added: int = 0
    updated: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: Outcome) -> None:
        self.added += other.added
        self.updated += other.updated
        self.refused.extend(other.refused)


def _import(
    engine: Engine,
    lines: Sequence[tuple[int, Any]],
    account_of: Callable[[Any], str],
    values_of: Callable[[Any], dict[str, Any]],
    key_of: Callable[[dict[str, Any]], tuple[str, ...]],
    existing: Callable[[Connection, list[str]], set[tuple[str, ...]]],
    store: Callable[[Connection, list[dict[str, Any]], list[tuple[int, Any]]], None],
) -> Outcome:
    """The shape of every import: refuse rows of unknown accounts, count what exists, store."""
    outcome = Outcome()
    with write_transaction(engine) as conn:
        known = known_accounts(conn, (account_of(item) for _, item in lines))
        kept: dict[tuple[str, ...], tuple[int, Any, dict[str, Any]]] = {}
        for line, item in lines:
            account = account_of(item)
            if account not in known:
                outcome.refused.append({"line": line, "error": f"no account {account!r}"})
                continue
            values = values_of(item)
            kept[key_of(values)] = (line, item, values)  # the last row of a key wins
        before = existing(conn, sorted({k[0] for k in kept}))
        outcome.added = sum(1 for key in kept if key not in before)
        outcome.updated = len(kept) - outcome.added
        store(
            conn,
            [v for _, _, v in kept.values()],
            [(line, item) for line, item, _ in kept.values()],
        )
        if kept:
            bump_revision(conn, RESPONSE)
    return outcome


def _keys(conn: Connection, columns: Sequence[Any], accounts: list[str]) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for chunk in chunks(accounts):
        found.update(
            tuple(row) for row in conn.execute(select(*columns).where(columns[0].in_(chunk)))
        )
    return found


def _keyed(
    engine: Engine,
    lines: Sequence[tuple[int, Any]],
    table: Table,
    keys: list[str],
    values_of: Callable[[Any], dict[str, Any]],
) -> Outcome:
    """An import of rows that are each one row of ``table``, keyed by ``keys``."""
    return _import(
        engine,
        lines,
        lambda item: item.account_number,
        values_of,
        lambda v: tuple(v[k] for k in keys),
        lambda conn, accounts: _keys(conn, [table.c[k] for k in keys], accounts),
        lambda conn, rows, _: upsert(conn, table, rows, keys),
    )


def upsert_zones(engine: Engine, lines: Sequence[tuple[int, Zone]]) -> Outcome:
    """Add or update zone descriptions (checked rows, with their line numbers)."""
    return _keyed(engine, lines, schema.account_zone, ZONE_KEY, zone_values)


def upsert_users(engine: Engine, lines: Sequence[tuple[int, PanelUser]]) -> Outcome:
    """Add or update panel users (checked rows, with their line numbers)."""
    return _keyed(engine, lines, schema.account_user, USER_KEY, user_values)


ContactLine = tuple[Contact, Placement, frozenset[str]]
"""A contact row of an import: the contact, its place on a call list, and which of the contact's
fields (``phones``, ``email``, ``relation``, ``notes``, ``notify``, ``notify_by``) the file has
columns for."""
CONTACT_FIELDS = {
    "phones": tuple(column for pair in PHONE_COLUMNS for column in pair),
    "email": ("email",),
    "relation": ("relation",),
    "notes": ("notes",),
    "notify": ("notify",),
    "notify_by": ("notify_by",),
}
"""The columns of the contact table each field of a contact row sets."""


def upsert_contacts(engine: Engine, lines: Sequence[tuple[int, ContactLine]]) -> Outcome:
    """Add or update contacts by (account, name) and place each on its rows' call lists, in the
    order of the rows, by the placing rule of ``contact update`` (``store.contacts.place_all``;
    a row without an order leaves a contact already on its list where it is). A contact that
    exists keeps the fields the file has no column for; a contact on two lists is two rows.
    Passcodes are not imported: each is set with ``contact update --passcode``."""
    given = frozenset().union(*(fields for _, (_, _, fields) in lines))
    changed = ["updated_us", *(c for f in sorted(given) for c in CONTACT_FIELDS[f])]

    def store(conn: Connection, rows: list[dict[str, Any]], kept: list[tuple[int, Any]]) -> None:
        stamp = now_us()
        upsert(
            conn, schema.contact, [{**r, "updated_us": stamp} for r in rows], CONTACT_KEY,
            lambda excluded: {column: excluded[column] for column in changed},
        )  # fmt: skip
        ids = _contact_ids(conn, sorted({r["account_number"] for r in rows}))
        places = sorted(
            (line, contact.account_number, contact.name.strip(), place)
            for _, (contact, lined) in kept
            for line, place in lined
        )
        place_all(conn, [(a, ids[(a, name)], place) for _, a, name, place in places], stay=True)

    return _import(
        engine,
        _merged_contacts(lines),
        lambda item: item[0].account_number,
        lambda item: contact_values(item[0]),
        lambda v: (v["account_number"], v["name"]),
        lambda conn, accounts: _keys(conn, (CONTACT.account_number, CONTACT.name), accounts),
        store,
    )


def _merged_contacts(
    lines: Sequence[tuple[int, ContactLine]],
) -> list[tuple[int, tuple[Contact, list[tuple[int, Placement]]]]]:
    """Rows of the same contact in one chunk become one (its last row's details), with the
    place of every row, by line."""
    merged: dict[tuple[str, str], tuple[int, tuple[Contact, list[tuple[int, Placement]]]]] = {}
    for line, (contact, place, _) in lines:
        key = (contact.account_number, contact.name.strip())
        places = merged[key][1][1] if key in merged else []
        places.append((line, place))
        merged[key] = (line, (contact, places))
    return list(merged.values())


def _contact_ids(conn: Connection, accounts: list[str]) -> dict[tuple[str, str], int]:
    ids: dict[tuple[str, str], int] = {}
    for chunk in chunks(accounts):
        for contact_id, account, name in conn.execute(
            select(CONTACT.contact_id, CONTACT.account_number, CONTACT.name).where(
                CONTACT.account_number.in_(chunk)
            )
        ):
            ids[(account, name)] = int(contact_id)
    return ids


def set_account_responses(engine: Engine, rows: Sequence[tuple[str, Mapping[str, str]]]) -> None:
    """Set the agencies (police, fire, medical: codes checked already) and permits of existing
    accounts, each row only the columns it names; ``""`` clears one. One statement per set of
    columns, many rows each."""
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    stamp = now_us()
    for account, values in rows:
        if values:
            row: dict[str, Any] = {f"new_{k}": (v.strip() or None) for k, v in values.items()}
            row.update(number=account, stamp=stamp)
            by_columns.setdefault(tuple(sorted(values)), []).append(row)
    if not by_columns:
        return
    with write_transaction(engine) as conn:
        for columns, many in by_columns.items():
            statement = (
                update(schema.account)
                .where(ACCOUNT.account_number == bindparam("number"))
                .values(
                    {
                        **{c: bindparam(f"new_{c}") for c in columns},
                        "updated_us": bindparam("stamp"),
                    }
                )
            )
            for chunk in chunks(many):
                conn.execute(statement, list(chunk))
        bump_revision(conn, RESPONSE)
