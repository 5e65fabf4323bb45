"""The console's data entry of account response data through a real server: only admins (401
without a session, 403 for operators and supervisors, the CSRF header on every change), the
store's validation answered as 422 with its message, round trips of zones, panel users, contacts
with their call lists, agencies and permit, and passcodes that are sent once and never answered
(the database holds only their Argon2 hash)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from alarmhub.core.response import Agency, AgencyKind
from alarmhub.store import operators, passcodes, response
from alarmhub.store import schema as s
from tests.support.console_client import PASSWORD, Console
from tests.support.console_station import Hub, provision_console, refused, served

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700003"
BASE = f"/accounts/{ACCOUNT}"
PASSCODE = "blue-heron-42"
DURESS = "red-kite-99"
WRITES = [
    f"{BASE}/zones",
    f"{BASE}/zones/remove",
    f"{BASE}/users",
    f"{BASE}/users/remove",
    f"{BASE}/contacts",
    f"{BASE}/contacts/1",
    f"{BASE}/contacts/1/remove",
    f"{BASE}/response",
]


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir = tmp_path_factory.mktemp("account-data")
    token, engine = provision_console(data_dir)
    operators.add_operator(engine, "ADM", "Ada Admin", "admin", PASSWORD)
    for code, kind, name in (
        ("SPD", AgencyKind.POLICE, "Springfield Police"),
        ("SFD", AgencyKind.FIRE, "Springfield Fire"),
        ("SEMS", AgencyKind.MEDICAL, "Springfield EMS"),
    ):
        response.add_agency(engine, Agency(code, kind, name, "555-0199"))
    with served(data_dir, token, engine, [PASSCODE, DURESS]) as hub:
        yield hub


@pytest.fixture(scope="module")
def admin(hub: Hub) -> Console:
    return hub.console().sign_in("ADM")


def account(console: Console, number: str = ACCOUNT) -> dict[str, Any]:
    answer = console.get(f"/accounts/{number}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["account"])


def changed(console: Console, path: str, body: object) -> dict[str, Any]:
    return dict(console.ok(f"{BASE}{path}", body)["account"])


def test_every_endpoint_refuses_without_a_session(hub: Hub) -> None:
    client = httpx.Client(base_url=hub.url, timeout=30)
    try:
        refused(client.get(f"/console/api{BASE}"), 401, "CONSOLE-SESSION")
        for path in WRITES:
            refused(client.post(f"/console/api{path}", json={}), 401, "CONSOLE-SESSION")
    finally:
        client.close()


def test_operators_and_supervisors_are_refused_403(hub: Hub) -> None:
    for code in ("OP1", "SUP"):
        console = hub.console().sign_in(code)
        message = refused(console.get(BASE), 403, "OPS-ROLE")
        assert "admin" in message
        refused(console.post(f"{BASE}/zones", {"zone": "1", "description": "X"}), 403, "OPS-ROLE")
        for path in WRITES:
            refused(console.post(path, {}), 403, "OPS-ROLE")
    assert response.list_zones(hub.engine, ACCOUNT) == []


def test_changes_need_the_csrf_token(hub: Hub, admin: Console) -> None:
    for csrf in ("", "forged"):
        for path in WRITES:
            body = {"zone": "1", "description": "FRONT DOOR"}
            refused(admin.post(path, body, csrf=csrf), 403, "CONSOLE-CSRF")
    assert account(admin)["zones"] == []


def test_an_account_as_the_page_sees_it(admin: Console) -> None:
    data = account(admin, "700004")
    assert data["account_number"] == "700004"
    assert data["company_name"] == "Subscriber 4"
    assert data["zones"] == data["users"] == data["contacts"] == data["call_lists"] == []
    assert data["permit"] == ""
    assert data["has_duress_code"] is False
    assert data["assigned"] == {"police": "", "fire": "", "medical": ""}
    assert [a["code"] for a in data["agencies"]] == ["SFD", "SEMS", "SPD"]
    refused(admin.get("/accounts/999999"), 404, "CONSOLE-NOACCOUNT")
    refused(admin.get("/accounts/has%20space"), 422, "CONSOLE-INPUT")


def test_zones_round_trip_with_the_stores_validation(admin: Console) -> None:
    data = changed(admin, "/zones", {"zone": "15", "description": "BACK DOOR"})
    assert data["zones"] == [
        {"zone": "015", "area": "", "description": "BACK DOOR", "equipment": ""}
    ]
    data = changed(
        admin,
        "/zones",
        {"zone": "015", "area": "2", "description": "GARAGE DOOR", "equipment": "contact"},
    )
    assert data["zones"][1] == {
        "zone": "015",
        "area": "02",
        "description": "GARAGE DOOR",
        "equipment": "contact",
    }
    data = changed(admin, "/zones", {"zone": "15", "description": "REAR DOOR"})
    assert data["zones"][0]["description"] == "REAR DOOR"
    for body, words in (
        ({"zone": "1000", "description": "X"}, "zone must be a number from 000 to 999"),
        ({"zone": "7", "description": "  "}, "description must not be empty"),
        ({"zone": "7", "description": "X" * 41}, "at most 40 characters"),
        ({"zone": "7", "area": "abc", "description": "X"}, "area must be a number"),
    ):
        assert words in refused(admin.post(f"{BASE}/zones", body), 422, "CONSOLE-DATA")
    assert "has no zone 77" in refused(
        admin.post(f"{BASE}/zones/remove", {"zone": "77"}), 422, "CONSOLE-DATA"
    )
    message = refused(
        admin.post("/accounts/999999/zones", {"zone": "1", "description": "X"}), 422, "CONSOLE-DATA"
    )
    assert "no account '999999'" in message
    data = changed(admin, "/zones/remove", {"zone": "15", "area": "2"})
    assert [(z["zone"], z["area"]) for z in data["zones"]] == [("015", "")]
    assert account(admin)["zones"] == data["zones"]


def test_panel_users_round_trip(admin: Console) -> None:
    data = changed(admin, "/users", {"user": "2", "name": "JOHN SMITH"})
    assert data["users"] == [{"user": "002", "name": "JOHN SMITH"}]
    changed(admin, "/users", {"user": "002", "name": "JANE SMITH"})
    assert account(admin)["users"] == [{"user": "002", "name": "JANE SMITH"}]
    assert "name must not be empty" in refused(
        admin.post(f"{BASE}/users", {"user": "3", "name": ""}), 422, "CONSOLE-DATA"
    )
    assert changed(admin, "/users/remove", {"user": "2"})["users"] == []


def contact_by_name(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in data["contacts"] if c["name"] == name)


def test_contacts_and_call_lists_round_trip_and_the_passcode_is_never_answered(
    hub: Hub, admin: Console
) -> None:
    number = "700005"
    path = f"/accounts/{number}"
    first = {
        "name": "Alice Owner",
        "phones": [
            {"number": "555-0101", "kind": "mobile"},
            {"number": "555-0102", "kind": "home"},
        ],
        "email": "alice@example.org",
        "relation": "owner",
        "notes": "works nights",
        "lists": [{"name": "primary"}, {"name": "FIRE", "order": 1}],
        "passcode": PASSCODE,
    }
    answer = admin.post(f"{path}/contacts", first)
    assert answer.status_code == 200, answer.text
    assert PASSCODE not in answer.text and "argon2" not in answer.text
    admin.ok(f"{path}/contacts", {"name": "Bob Keyholder", "phones": [{"number": "555-0201"}]})
    data = admin.ok(
        f"{path}/contacts", {"name": "Carol Manager", "lists": [{"name": "PRIMARY", "order": 1}]}
    )["account"]
    alice = contact_by_name(data, "Alice Owner")
    assert alice["phones"] == [
        {"number": "555-0101", "kind": "mobile"},
        {"number": "555-0102", "kind": "home"},
    ]
    assert alice["has_passcode"] is True
    assert "passcode" not in alice and "passcode_hash" not in alice
    assert alice["email"] == "alice@example.org" and alice["relation"] == "owner"
    lists = {cl["name"]: [c["name"] for c in cl["contacts"]] for cl in data["call_lists"]}
    assert lists == {
        "PRIMARY": ["Carol Manager", "Alice Owner", "Bob Keyholder"],
        "FIRE": ["Alice Owner"],
    }
    assert data["call_lists"][0]["name"] == "PRIMARY", "PRIMARY first"

    # the database holds the hash, which checks the passcode; no answer ever held either
    with hub.engine.connect() as conn:
        stored = conn.execute(
            select(s.contact.c.passcode_hash).where(s.contact.c.contact_id == alice["id"])
        ).scalar_one()
    assert stored.startswith("$argon2") and PASSCODE not in stored
    assert passcodes.matches(stored, PASSCODE)
    whole = admin.get(path)
    assert PASSCODE not in whole.text and stored not in whole.text and "argon2" not in whole.text

    # update: Bob to the top of PRIMARY, Alice off FIRE, a new number, the passcode cleared
    bob = contact_by_name(data, "Bob Keyholder")
    data = admin.ok(
        f"{path}/contacts/{bob['id']}",
        {"lists": [{"name": "PRIMARY", "order": 1}], "relation": "keyholder"},
    )["account"]
    assert data["call_lists"][0]["contacts"][0]["name"] == "Bob Keyholder"
    assert contact_by_name(data, "Bob Keyholder")["relation"] == "keyholder"
    data = admin.ok(
        f"{path}/contacts/{alice['id']}",
        {
            "off_lists": ["fire"],
            "phones": [{"number": "555-0109", "kind": "work"}],
            "clear_passcode": True,
        },
    )["account"]
    alice = contact_by_name(data, "Alice Owner")
    assert alice["phones"] == [{"number": "555-0109", "kind": "work"}]
    assert alice["has_passcode"] is False
    assert [cl["name"] for cl in data["call_lists"]] == ["PRIMARY"]
    data = admin.ok(f"{path}/contacts/{alice['id']}", {"passcode": PASSCODE})["account"]
    assert contact_by_name(data, "Alice Owner")["has_passcode"] is True

    # remove
    data = admin.ok(f"{path}/contacts/{bob['id']}/remove")["account"]
    assert [c["name"] for c in data["call_lists"][0]["contacts"]] == [
        "Carol Manager",
        "Alice Owner",
    ]
    assert "has no contact" in refused(
        admin.post(f"{path}/contacts/{bob['id']}/remove"), 422, "CONSOLE-DATA"
    )


def test_contact_validation_is_the_stores(admin: Console) -> None:
    path = "/accounts/700006/contacts"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": ""}, "name must not be empty"),
        ({"name": "X", "phones": [{"number": "call me"}]}, "may hold only digits"),
        ({"name": "X", "phones": [{"number": "1", "kind": "pager"}]}, "phone kind 'pager'"),
        ({"name": "X", "phones": [{"number": str(n)} for n in range(1, 5)]}, "at most 3"),
        ({"name": "X", "email": "nobody"}, "is not an address"),
        ({"name": "X", "lists": [{"name": "NO SPACES"}]}, "a call list name is"),
        ({"name": "X", "lists": [{"name": "FIRE", "order": 0}]}, "order is 1-999"),
        ({"name": "X", "passcode": "ab"}, "a passcode is 3-32"),
    ]
    for body, words in cases:
        message = refused(admin.post(path, body), 422, "CONSOLE-DATA")
        assert words in message, (body, message)
    admin.ok(path, {"name": "Dan", "phones": [{"number": "1"}]})
    assert "already has a contact named 'Dan'" in refused(
        admin.post(path, {"name": "Dan"}), 422, "CONSOLE-DATA"
    )
    eve = admin.ok(path, {"name": "Eve", "phones": [{"number": "2"}]})["account"]["contacts"][1]
    assert "already has a contact named 'Dan'" in refused(
        admin.post(f"{path}/{eve['id']}", {"name": "Dan"}), 422, "CONSOLE-DATA"
    )
    admin.ok(f"{path}/{eve['id']}/remove")
    for body in (
        {"name": "X", "phones": "555-0101"},
        {"name": "X", "phones": [{"number": 5}]},
        {"name": "X", "lists": ["PRIMARY"]},
        {"name": "X", "nickname": "x"},
    ):
        refused(admin.post(path, body), 422, "CONSOLE-INPUT")
    refused(admin.post("/accounts/700006/contacts/abc", {}), 422, "CONSOLE-INPUT")
    assert [c["name"] for c in account(admin, "700006")["contacts"]] == ["Dan"]


def test_agencies_permit_and_duress_code(hub: Hub, admin: Console) -> None:
    path = "/accounts/700007/response"
    answer = admin.post(
        path, {"police": "SPD", "fire": "SFD", "permit": "PERMIT-2024-117", "duress_code": DURESS}
    )
    assert answer.status_code == 200, answer.text
    assert DURESS not in answer.text and "argon2" not in answer.text
    data = answer.json()["account"]
    assert data["assigned"] == {"police": "SPD", "fire": "SFD", "medical": ""}
    assert data["permit"] == "PERMIT-2024-117"
    assert data["has_duress_code"] is True
    assert "is fire, not police" in refused(
        admin.post(path, {"police": "SFD"}), 422, "CONSOLE-DATA"
    )
    assert "no agency 'NOPE'" in refused(admin.post(path, {"medical": "NOPE"}), 422, "CONSOLE-DATA")
    data = admin.ok(path, {"police": "", "clear_duress": True, "permit": ""})["account"]
    assert data["assigned"]["police"] == "" and data["assigned"]["fire"] == "SFD"
    assert data["has_duress_code"] is False and data["permit"] == ""
