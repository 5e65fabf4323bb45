"""What the station reads of an account's response data while alarms come and are worked
(decisions section 7): the zone descriptions and user names routing adds to HIST_TEXT, the call
list and agencies of the alarm screen, the sizes of call lists (XMAPEND's CONTACT_LIST), the
hashes a passcode check compares with, and the calls operators made for an alarm."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select

from alarmhub.core import response as rules
from alarmhub.core.response import AgencyKind, CallOutcome
from alarmhub.store import schema
from alarmhub.store.commit import fixed_shape

RESPONSE = "response"
"""The revision every change of response data bumps."""
CHUNK = 500

ACCOUNT = schema.account.c
ZONE = schema.account_zone.c
USER = schema.account_user.c
CONTACT = schema.contact.c
ENTRY = schema.call_list_entry.c
AGENCY = schema.agency.c
ATTEMPT = schema.call_attempt.c

PHONE_COLUMNS = (("phone1", "kind1"), ("phone2", "kind2"), ("phone3", "kind3"))
AGENCY_KINDS = tuple(kind.value for kind in AgencyKind)  # also the account's columns


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A row as a dict with plain ``str`` keys (SQLAlchemy's are a subclass that orjson, the
    console's JSON, refuses as keys)."""
    return {str(key): value for key, value in row.items()}


def phones(row: Mapping[Any, Any]) -> list[dict[str, str]]:
    """A contact row's phone numbers with their kinds, in order."""
    return [
        {"number": row[number], "kind": row[kind]} for number, kind in PHONE_COLUMNS if row[number]
    ]


Descriptions = dict[str, tuple[dict[tuple[str, str], str], dict[str, str]]]
"""Per account: zone descriptions by (zone, area), user names by user number."""


_ZONES_OF = select(ZONE.account_number, ZONE.zone, ZONE.area, ZONE.description).where(
    ZONE.account_number.in_(bindparam("accounts", expanding=True))
)
_USERS_OF = select(USER.account_number, USER.user_number, USER.name).where(
    USER.account_number.in_(bindparam("accounts", expanding=True))
)


def descriptions(conn: Connection, accounts: Iterable[str]) -> Descriptions:
    """The zone descriptions and panel-user names of ``accounts`` (those of a batch of
    signals), in two queries per chunk of accounts: never the whole table. Every account asked
    for has an entry, empty when it has none."""
    found: Descriptions = {}
    for chunk in chunks(sorted(set(accounts))):
        for account in chunk:
            found[account] = ({}, {})
        wanted = {"accounts": fixed_shape(chunk)}
        for account, zone, area, text in conn.execute(_ZONES_OF, wanted):
            found[account][0][(zone, area)] = text
        for account, user, name in conn.execute(_USERS_OF, wanted):
            found[account][1][user] = name
    return found


def call_list(conn: Connection, account_number: str, list_name: str) -> list[dict[str, Any]]:
    """The contacts of one call list in the order they are called."""
    rows = conn.execute(
        select(schema.contact, ENTRY.position)
        .join(schema.call_list_entry, ENTRY.contact_id == CONTACT.contact_id)
        .where(ENTRY.account_number == account_number, ENTRY.list_name == list_name)
        .order_by(ENTRY.position, CONTACT.contact_id)
    ).mappings()
    return [
        {
            "id": int(row["contact_id"]),
            "name": row["name"],
            "relation": row["relation"],
            "phones": phones(row),
            "notes": row["notes"],
            "order": int(row["position"]),
        }
        for row in rows
    ]


def list_sizes(conn: Connection, accounts: Iterable[str]) -> dict[str, dict[str, int]]:
    """How many contacts each call list of ``accounts`` holds (XMAPEND's CONTACT_LIST)."""
    sizes: dict[str, dict[str, int]] = defaultdict(dict)
    for chunk in chunks(sorted(set(accounts))):
        for account, name, count in conn.execute(
            select(ENTRY.account_number, ENTRY.list_name, func.count())
            .where(ENTRY.account_number.in_(chunk))
            .group_by(ENTRY.account_number, ENTRY.list_name)
        ):
            sizes[account][name] = int(count)
    return sizes


def account_response(conn: Connection, account_number: str) -> dict[str, Any]:
    """An account's agencies (with name and phone), permit, premises phone, and whether it has
    a duress code."""
    row = (
        conn.execute(
            select(
                ACCOUNT.police,
                ACCOUNT.fire,
                ACCOUNT.medical,
                ACCOUNT.permit,
                ACCOUNT.duress_hash,
                ACCOUNT.phone,
            ).where(ACCOUNT.account_number == account_number)
        )
        .mappings()
        .first()
    )
    if row is None:
        return {"agencies": [], "permit": "", "phone": "", "has_duress_code": False}
    codes = [row[kind] for kind in AGENCY_KINDS if row[kind]]
    found = {
        r["code"]: plain(r)
        for r in conn.execute(
            select(AGENCY.code, AGENCY.kind, AGENCY.name, AGENCY.phone).where(
                AGENCY.code.in_(codes)
            )
        ).mappings()
    }
    return {
        "agencies": [found[code] for code in codes if code in found],
        "permit": row["permit"] or "",
        "phone": row["phone"] or "",
        "has_duress_code": row["duress_hash"] is not None,
    }


def passcode_hashes(
    conn: Connection, account_number: str, contact_id: int | None = None
) -> tuple[list[str], str | None]:
    """The hashes a passcode check compares with: the contacts' passcodes (one contact's, when
    named), the duress code."""
    query = select(CONTACT.passcode_hash).where(
        CONTACT.account_number == account_number, CONTACT.passcode_hash.is_not(None)
    )
    if contact_id is not None:
        query = query.where(CONTACT.contact_id == contact_id)
    hashes = conn.execute(query).scalars()
    duress = conn.execute(
        select(ACCOUNT.duress_hash).where(ACCOUNT.account_number == account_number)
    ).scalar()
    return list(hashes), duress


def type_call_list(conn: Connection, event_code: str) -> str:
    """The call list alarms of ``event_code`` use: the station's choice, else PRIMARY."""
    chosen = conn.execute(
        select(schema.alarm_type.c.contact_list).where(schema.alarm_type.c.code == event_code)
    ).scalar()
    return chosen or rules.DEFAULT_CALL_LIST


def zone_of(conn: Connection, account_number: str, zone: str, area: str) -> dict[str, str] | None:
    """What the alarm's zone is (description and equipment), the area's own entry first."""
    rows = {
        r["area"]: plain(r)
        for r in conn.execute(
            select(ZONE.area, ZONE.description, ZONE.equipment).where(
                ZONE.account_number == account_number,
                ZONE.zone == zone,
                ZONE.area.in_([area, rules.ANY_AREA]),
            )
        ).mappings()
    }
    found = rows.get(area) or rows.get(rules.ANY_AREA)
    if found is None:
        return None
    return {"description": found["description"], "equipment": found["equipment"]}


def record_call(
    conn: Connection,
    alarm_id: int,
    opr: str,
    at_us: int,
    phone: str,
    outcome: CallOutcome,
    contact_id: int | None,
) -> None:
    conn.execute(
        insert(schema.call_attempt).values(
            alarm_id=alarm_id,
            at_us=at_us,
            contact_id=contact_id,
            phone=phone,
            outcome=outcome.value,
            opr=opr,
        )
    )


def calls(conn: Connection, alarm_id: int) -> list[dict[str, Any]]:
    """The calls made for an alarm, oldest first."""
    rows = conn.execute(
        select(ATTEMPT.at_us, ATTEMPT.contact_id, ATTEMPT.phone, ATTEMPT.outcome, ATTEMPT.opr)
        .where(ATTEMPT.alarm_id == alarm_id)
        .order_by(ATTEMPT.at_us)
    ).mappings()
    return [plain(r) for r in rows]


def contact_of(conn: Connection, account_number: str, contact_id: int) -> dict[str, Any] | None:
    """One contact of the account (name and phones), or None when it has no such contact."""
    row = (
        conn.execute(
            select(schema.contact).where(
                CONTACT.account_number == account_number, CONTACT.contact_id == contact_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    return {"id": int(row["contact_id"]), "name": row["name"], "phones": phones(row)}


def for_alarm(
    conn: Connection, account_number: str, list_name: str, zone: str, area: str, alarm_id: int
) -> dict[str, Any]:
    """What the alarm screen shows of the account's response data: the call list of the
    alarm's type in order (each contact marked with the calls made to it), the contact to call
    next, the zone, the agencies with the permit."""
    contacts = call_list(conn, account_number, list_name)
    made = calls(conn, alarm_id)
    tried: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for call in made:
        if call["contact_id"] is not None:
            tried[int(call["contact_id"])].append(call)
    for contact in contacts:
        contact["calls"] = tried.get(contact["id"], [])
    return {
        "call_list": {
            "name": list_name,
            "contacts": contacts,
            "next": rules.next_to_call([c["id"] for c in contacts], tried),
        },
        "calls": made,
        "zone": zone_of(conn, account_number, zone, area),
        **account_response(conn, account_number),
    }
