"""An account's contacts and their call lists in the store (decisions section 7): contacts
added, changed and removed (a passcode arrives here already hashed, Argon2), their places on the
named call lists, and the lists as the console, the API and XMAPEND read them.

Every change bumps the ``response`` revision, as the rest of an account's response data does
(:mod:`alarmhub.store.response`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, insert, select, tuple_, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import notifications
from alarmhub.core import response as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import DEFAULT_CALL_LIST, Contact, Phone
from alarmhub.store import alarm_response, schema
from alarmhub.store.alarm_response import CONTACT, ENTRY, PHONE_COLUMNS, RESPONSE, chunks
from alarmhub.store.engine import write_transaction
from alarmhub.store.provisioning import bump_revision
from alarmhub.store.response import checked, need_account


@dataclass(frozen=True, slots=True)
class Placement:
    """A place on a call list: ``order`` 1 is called first; None puts it last."""

    list_name: str
    order: int | None = None


def placement(list_name: str, order: int | None = None) -> Placement:
    """A checked placement, its list name as kept (upper case)."""
    name = rules.call_list_name(list_name)
    checked(rules.call_list_problem(name))
    if order is not None and not 1 <= order <= 999:
        raise ProvisioningError("a call list order is 1-999")
    return Placement(name, order)


def contact_values(contact: Contact) -> dict[str, Any]:
    values: dict[str, Any] = {
        "account_number": contact.account_number,
        "name": contact.name.strip(),
        "email": contact.email.strip(),
        "relation": contact.relation.strip(),
        "notes": contact.notes.strip(),
        "notify": notifications.words(contact.notify),
        "notify_by": notifications.words(contact.notify_by),
    }
    for n, (number, kind) in enumerate(PHONE_COLUMNS):
        phone = contact.phones[n] if n < len(contact.phones) else None
        values[number] = phone.number.strip() if phone else ""
        values[kind] = phone.kind.value if phone else ""
    return values


Place = tuple[str, int, Placement]
"""A place of a contact (its account and id) on one of the account's call lists."""
ListKey = tuple[str, str]
"""A call list: its account and name."""


def _lists_of(conn: Connection, keys: Sequence[ListKey]) -> dict[ListKey, list[int]]:
    """The contacts of call lists in calling order (a list no contact is on: empty)."""
    lists: dict[ListKey, list[int]] = {key: [] for key in keys}
    for chunk in chunks(sorted({account for account, _ in lists})):  # an account has few lists
        for account, name, contact_id in conn.execute(
            select(ENTRY.account_number, ENTRY.list_name, ENTRY.contact_id)
            .where(ENTRY.account_number.in_(chunk))
            .order_by(ENTRY.account_number, ENTRY.list_name, ENTRY.position, ENTRY.contact_id)
        ):
            if (account, name) in lists:
                lists[(account, name)].append(int(contact_id))
    return lists


def _write_lists(
    conn: Connection,
    lists: Mapping[ListKey, list[int]],
    before: Mapping[ListKey, list[int]] | None = None,
) -> None:
    """Keep each call list as its contacts, numbered 1, 2, 3... in that order. Given the lists
    as they were (``before``), one that only grew at its end (a new list, or one added to last:
    most of an import) gets only its new entries; any other is written again whole."""
    kept = dict.fromkeys(lists, 0)
    if before is not None:
        kept.update((k, len(before[k])) for k in lists if lists[k][: len(before[k])] == before[k])
    again = sorted(k for k in lists if before is None or (before[k] and not kept[k]))
    for chunk in chunks(again):
        conn.execute(
            delete(schema.call_list_entry).where(
                tuple_(ENTRY.account_number, ENTRY.list_name).in_(list(chunk))
            )
        )
    rows = [
        {"account_number": account, "list_name": name, "contact_id": contact_id,
         "position": position}
        for (account, name), contacts in lists.items()
        for position, contact_id in enumerate(contacts, start=1)
        if position > kept[(account, name)]
    ]  # fmt: skip
    for chunk in chunks(rows):
        conn.execute(insert(schema.call_list_entry), list(chunk))


def place_all(conn: Connection, places: Sequence[Place], stay: bool = False) -> None:
    """Put contacts on call lists, one place after the other, by the one rule of every way in
    (``contact add``, ``contact update``, ``contact import``, the console, the integrator API):
    a place with an order puts the contact at that order (1 is called first), whoever is there
    or after moving down one; a place without one puts it last. A contact already on the list
    is moved. With ``stay`` (an import) a place without an order leaves a contact already on
    the list where it is, so that importing a file again changes nothing. Each list is read
    once and written once, when it changed."""
    keys = sorted({(account, where.list_name) for account, _, where in places})
    lists = _lists_of(conn, keys)
    before = {key: list(contacts) for key, contacts in lists.items()}
    for account, contact_id, where in places:
        contacts = lists[(account, where.list_name)]
        if contact_id in contacts:
            if stay and where.order is None:
                continue
            contacts.remove(contact_id)
        at = len(contacts) if where.order is None else min(where.order - 1, len(contacts))
        contacts.insert(at, contact_id)
    _write_lists(conn, {key: lists[key] for key in keys if lists[key] != before[key]}, before)


def _take_off(conn: Connection, account: str, contact_id: int, list_names: Iterable[str]) -> None:
    """Take a contact off call lists; those after it move up one."""
    lists = _lists_of(conn, [(account, name) for name in list_names])
    _write_lists(
        conn, {key: [c for c in contacts if c != contact_id] for key, contacts in lists.items()
               if contact_id in contacts}
    )  # fmt: skip


def _name_free(conn: Connection, account: str, name: str, but: int | None = None) -> None:
    """Refuse a contact name the account already gives another contact (``but`` excepted)."""
    taken = select(CONTACT.contact_id).where(
        CONTACT.account_number == account, CONTACT.name == name
    )
    if but is not None:
        taken = taken.where(CONTACT.contact_id != but)
    if conn.execute(taken).first():
        raise ProvisioningError(
            f"account {account!r} already has a contact named {name!r}"
            + ("" if but is not None else " (change it with 'contact update')")
        )


def add_contact(
    engine: Engine,
    contact: Contact,
    lists: Sequence[Placement] = (),
    passcode_hash: str | None = None,
) -> int:
    with write_transaction(engine) as conn:
        return add_contact_in(conn, contact, lists, passcode_hash)


def add_contact_in(
    conn: Connection,
    contact: Contact,
    lists: Sequence[Placement] = (),
    passcode_hash: str | None = None,
) -> int:
    """Add a contact of an account, on the call lists named (``PRIMARY`` when none is);
    its id."""
    checked(rules.contact_problem(contact))
    values = contact_values(contact)
    need_account(conn, contact.account_number)
    _name_free(conn, contact.account_number, values["name"])
    contact_id = conn.execute(
        insert(schema.contact)
        .values({**values, "passcode_hash": passcode_hash, "updated_us": now_us()})
        .returning(CONTACT.contact_id)
    ).scalar_one()
    account = contact.account_number
    place_all(conn, [(account, contact_id, w) for w in lists or [Placement(DEFAULT_CALL_LIST)]])
    bump_revision(conn, RESPONSE)
    return int(contact_id)


def update_contact(
    engine: Engine,
    account_number: str,
    contact_id: int,
    changes: Mapping[str, Any],
    lists: Sequence[Placement] = (),
    off_lists: Sequence[str] = (),
    passcode_hash: str | None = None,
    clear_passcode: bool = False,
) -> dict[str, Any]:
    with write_transaction(engine) as conn:
        return update_contact_in(
            conn, account_number, contact_id, changes, lists, off_lists, passcode_hash,
            clear_passcode,
        )  # fmt: skip


def update_contact_in(
    conn: Connection,
    account_number: str,
    contact_id: int,
    changes: Mapping[str, Any],
    lists: Sequence[Placement] = (),
    off_lists: Sequence[str] = (),
    passcode_hash: str | None = None,
    clear_passcode: bool = False,
) -> dict[str, Any]:
    """Change a contact: ``changes`` holds the fields of :class:`Contact` to replace (``phones``
    replaces every number); ``lists`` places it, ``off_lists`` takes it off lists."""
    current = contacts_of(conn, account_number, contact_id)
    if not current:
        raise ProvisioningError(f"account {account_number!r} has no contact {contact_id}")
    row = current[0]
    contact = Contact(
        account_number=account_number,
        name=changes.get("name", row["name"]),
        phones=tuple(
            changes["phones"]
            if "phones" in changes
            else (Phone(p["number"], rules.PhoneKind(p["kind"])) for p in row["phones"])
        ),
        email=changes.get("email", row["email"]),
        relation=changes.get("relation", row["relation"]),
        notes=changes.get("notes", row["notes"]),
        notify=tuple(changes.get("notify", row["notify"])),
        notify_by=tuple(changes.get("notify_by", row["notify_by"])),
    )
    checked(rules.contact_problem(contact))
    values: dict[str, Any] = {**contact_values(contact), "updated_us": now_us()}
    if passcode_hash is not None or clear_passcode:
        values["passcode_hash"] = passcode_hash
    _name_free(conn, account_number, values["name"], contact_id)
    conn.execute(update(schema.contact).where(CONTACT.contact_id == contact_id).values(values))
    _take_off(conn, account_number, contact_id, [rules.call_list_name(n) for n in off_lists])
    place_all(conn, [(account_number, contact_id, where) for where in lists])
    bump_revision(conn, RESPONSE)
    return contacts_of(conn, account_number, contact_id)[0]


def remove_contact(engine: Engine, account_number: str, contact_id: int) -> None:
    with write_transaction(engine) as conn:
        remove_contact_in(conn, account_number, contact_id)


def remove_contact_in(conn: Connection, account_number: str, contact_id: int) -> None:
    on_lists = conn.execute(
        select(ENTRY.list_name).where(
            ENTRY.account_number == account_number, ENTRY.contact_id == contact_id
        )
    ).scalars()
    _take_off(conn, account_number, contact_id, list(on_lists))
    gone = conn.execute(
        delete(schema.contact).where(
            CONTACT.account_number == account_number, CONTACT.contact_id == contact_id
        )
    ).rowcount
    if not gone:
        raise ProvisioningError(f"account {account_number!r} has no contact {contact_id}")
    bump_revision(conn, RESPONSE)


def call_lists(conn: Connection, account_number: str) -> dict[str, list[int]]:
    """An account's call lists: each list's contacts in calling order."""
    need_account(conn, account_number)
    lists: dict[str, list[int]] = defaultdict(list)
    for list_name, contact_id in conn.execute(
        select(ENTRY.list_name, ENTRY.contact_id)
        .where(ENTRY.account_number == account_number)
        .order_by(ENTRY.list_name, ENTRY.position, ENTRY.contact_id)
    ):
        lists[list_name].append(int(contact_id))
    return dict(lists)


def set_call_list_in(
    conn: Connection, account_number: str, list_name: str, contacts: Sequence[int]
) -> list[int]:
    """Make a call list exactly ``contacts`` (the account's, each once) in that order."""
    name = placement(list_name).list_name
    need_account(conn, account_number)
    if len(set(contacts)) != len(contacts):
        raise ProvisioningError("a contact is on a call list once")
    theirs = {c["id"] for c in contacts_of(conn, account_number)}
    strangers = [c for c in contacts if c not in theirs]
    if strangers:
        raise ProvisioningError(f"account {account_number!r} has no contact {strangers[0]}")
    _write_lists(conn, {(account_number, name): list(contacts)})
    bump_revision(conn, RESPONSE)
    return list(contacts)


def contacts_of(
    conn: Connection, account_number: str, contact_id: int | None = None
) -> list[dict[str, Any]]:
    """An account's contacts (or one), each with its phones and call lists, never its
    passcode: only whether it has one."""
    query = select(schema.contact).where(CONTACT.account_number == account_number)
    if contact_id is not None:
        query = query.where(CONTACT.contact_id == contact_id)
    rows = conn.execute(query.order_by(CONTACT.name, CONTACT.contact_id)).mappings().all()
    lists: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for list_name, entry_contact, position in conn.execute(
        select(ENTRY.list_name, ENTRY.contact_id, ENTRY.position)
        .where(ENTRY.account_number == account_number)
        .order_by(ENTRY.list_name, ENTRY.position, ENTRY.contact_id)
    ):
        lists[int(entry_contact)].append({"name": list_name, "order": int(position)})
    return [
        {
            "id": int(row["contact_id"]),
            "name": row["name"],
            "phones": alarm_response.phones(row),
            "email": row["email"],
            "relation": row["relation"],
            "notes": row["notes"],
            "notify": row["notify"].split(),
            "notify_by": row["notify_by"].split(),
            "has_passcode": row["passcode_hash"] is not None,
            "lists": lists.get(int(row["contact_id"]), []),
        }
        for row in rows
    ]


def list_contacts(engine: Engine, account_number: str) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        need_account(conn, account_number)
        return contacts_of(conn, account_number)


def in_calling_order(contacts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contacts as :func:`contacts_of` gives them, in calling order (``core.response.
    calling_order``: PRIMARY's by order, then the other lists', then those on no list), a tie
    by name."""
    return sorted(
        contacts,
        key=lambda c: (
            rules.calling_order((place["name"], place["order"]) for place in c["lists"]),
            c["name"],
            c["id"],
        ),
    )
