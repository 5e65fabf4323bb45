"""An account's response data through the integrator API (decisions section 10), on both
databases: zones, panel users, contacts and call lists created, read, changed and deleted with
their refusals, ETag conflicts, the audit record of each change, and a contact's passcode kept
only as a hash and never returned. (Scopes and the dealer's range: test_api_accounts.)

Each test has accounts of its own (700001..700030 of the console's station).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from alarmhub.store import schema as s
from tests.support.api_station import ApiHub, api_hub, problem

pytestmark = pytest.mark.backends("sqlite", "postgresql")

KEYS = {"admin": (("accounts:read", "accounts:write"), "")}


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    with api_hub(tmp_path_factory.mktemp("api_response"), KEYS) as hub:
        yield hub


# zones and users -------------------------------------------------------------------------------


def test_a_zone_is_set_read_changed_and_removed(hub: ApiHub) -> None:
    path = "/accounts/700001/zones"
    made = hub.call("admin", "PUT", f"{path}/5", {"description": "BACK DOOR"})
    assert made.status_code == 201, made.text
    zone = {"zone": "005", "area": "", "description": "BACK DOOR", "equipment": ""}
    assert made.json() == zone
    hub.ok(
        "admin", "PUT", f"{path}/5?area=2", {"description": "SAFE", "equipment": "PIR"}, status=201
    )
    assert hub.ok("admin", "GET", f"{path}/005") == zone
    assert hub.ok("admin", "GET", f"{path}/5?area=02")["description"] == "SAFE"
    assert [z["area"] for z in hub.ok("admin", "GET", path)["items"]] == ["", "02"]

    stale = {"If-Match": made.headers["etag"]}
    hub.ok("admin", "PUT", f"{path}/5", {"description": "FRONT DOOR"}, headers=stale)
    answer = hub.call("admin", "PUT", f"{path}/5", {"description": "X"}, headers=stale)
    problem(answer, 412, "API-ETAG")
    assert hub.ok("admin", "GET", f"{path}/5")["description"] == "FRONT DOOR"

    assert hub.call("admin", "DELETE", f"{path}/5").status_code == 204
    problem(hub.call("admin", "GET", f"{path}/5"), 404, "API-NOTFOUND")
    problem(hub.call("admin", "DELETE", f"{path}/5"), 404, "API-NOTFOUND")
    assert hub.ok("admin", "GET", f"{path}/5?area=2")["description"] == "SAFE"
    assert hub.audit_texts("700001") == [
        "API admin: PUT ZONE 005",
        "API admin: PUT ZONE 005 AREA 02",
        "API admin: PUT ZONE 005",
        "API admin: DELETE ZONE 005",
    ]


@pytest.mark.parametrize(
    ("zone", "body"),
    [
        ("1000", {"description": "TOO HIGH"}),
        ("abc", {"description": "LETTERS"}),
        ("1?area=123", {"description": "BAD AREA"}),
        ("1", {}),
        ("1", {"description": ""}),
        ("1", {"description": 7}),
        ("1", {"description": "D", "floor": 2}),
        ("1", {"description": "D" * 500}),
    ],
)
def test_a_bad_zone_is_422_and_changes_nothing(
    hub: ApiHub, zone: str, body: dict[str, Any]
) -> None:
    answer = hub.call("admin", "PUT", f"/accounts/700002/zones/{zone}", body)
    problem(answer, 422, "API-INPUT")
    assert hub.ok("admin", "GET", "/accounts/700002/zones")["items"] == []
    assert hub.audit_texts("700002") == []


def test_a_panel_user_is_set_read_changed_and_removed(hub: ApiHub) -> None:
    path = "/accounts/700003/users"
    assert hub.ok("admin", "PUT", f"{path}/7", {"name": "JOHN"}, status=201) == {
        "user": "007",
        "name": "JOHN",
    }
    assert hub.ok("admin", "PUT", f"{path}/007", {"name": "JANE"})["name"] == "JANE"
    assert hub.ok("admin", "GET", path)["items"] == [{"user": "007", "name": "JANE"}]
    problem(hub.call("admin", "PUT", f"{path}/8", {"name": ""}), 422, "API-INPUT")
    problem(hub.call("admin", "PUT", f"{path}/x", {"name": "A"}), 422, "API-INPUT")
    problem(hub.call("admin", "PUT", f"{path}/8", {"nom": "A"}), 422, "API-INPUT")
    assert hub.call("admin", "DELETE", f"{path}/7").status_code == 204
    problem(hub.call("admin", "GET", f"{path}/7"), 404, "API-NOTFOUND")
    assert hub.audit_texts("700003") == [
        "API admin: PUT USER 007",
        "API admin: PUT USER 007",
        "API admin: DELETE USER 007",
    ]


def test_the_data_of_an_account_that_does_not_exist_is_404(hub: ApiHub) -> None:
    for method, path, body in [
        ("GET", "/accounts/799999/zones", None),
        ("PUT", "/accounts/799999/zones/1", {"description": "D"}),
        ("GET", "/accounts/799999/users/1", None),
        ("POST", "/accounts/799999/contacts", {"name": "N"}),
        ("PUT", "/accounts/799999/call-lists/PRIMARY", {"contacts": []}),
    ]:
        problem(hub.call("admin", method, path, body), 404, "API-NOTFOUND")


# contacts ----------------------------------------------------------------------------------------


def test_a_contact_is_added_read_changed_and_removed_its_passcode_never_shown(hub: ApiHub) -> None:
    path = "/accounts/700004/contacts"
    body = {
        "name": "Ann Owner", "email": "ann@example.com", "relation": "owner", "notes": "dog",
        "phones": [{"number": "555-0101"}, {"number": "555-0102", "kind": "home"}],
        "passcode": "blue-42",
    }  # fmt: skip
    made = hub.call("admin", "POST", path, body)
    assert made.status_code == 201, made.text
    contact = made.json()
    assert made.headers["location"].endswith(f"{path}/{contact['id']}")
    assert contact == {
        "id": contact["id"], "name": "Ann Owner", "email": "ann@example.com",
        "relation": "owner", "notes": "dog", "has_passcode": True, "notify": [], "notify_by": [],
        "phones": [
            {"number": "555-0101", "kind": "mobile"}, {"number": "555-0102", "kind": "home"}
        ],
        "lists": [{"name": "PRIMARY", "order": 1}],
    }  # fmt: skip
    one = f"{path}/{contact['id']}"
    for answer in (made, hub.call("admin", "GET", one), hub.call("admin", "GET", path)):
        assert "blue-42" not in answer.text and '"passcode"' not in answer.text
    with hub.engine.connect() as conn:
        stored = conn.execute(
            select(s.contact.c.passcode_hash).where(s.contact.c.contact_id == contact["id"])
        ).scalar_one()
    assert stored.startswith("$argon2") and "blue-42" not in stored

    tag = hub.call("admin", "GET", one).headers["etag"]
    changed = hub.ok("admin", "PATCH", one, {"notes": "two dogs", "passcode": None},
                     headers={"If-Match": tag})  # fmt: skip
    assert changed["notes"] == "two dogs" and changed["has_passcode"] is False
    assert changed["email"] == "ann@example.com" and len(changed["phones"]) == 2
    stale = hub.call("admin", "PATCH", one, {"notes": "cat"}, headers={"If-Match": tag})
    problem(stale, 412, "API-ETAG")
    again = hub.ok("admin", "PATCH", one, {"passcode": "red-77", "phones": []})
    assert again["has_passcode"] is True and again["phones"] == []
    assert "red-77" not in str(again)

    assert hub.call("admin", "DELETE", one).status_code == 204
    problem(hub.call("admin", "GET", one), 404, "API-NOTFOUND")
    problem(hub.call("admin", "PATCH", one, {"notes": "x"}), 404, "API-NOTFOUND")
    problem(hub.call("admin", "DELETE", one), 404, "API-NOTFOUND")
    n = contact["id"]
    assert hub.audit_texts("700004") == [
        f"API admin: POST CONTACT {n}",
        f"API admin: PATCH CONTACT {n}",
        f"API admin: PATCH CONTACT {n}",
        f"API admin: DELETE CONTACT {n}",
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"email": "no-name@example.com"},
        {"name": 12},
        {"name": "A", "phones": "555-0101"},
        {"name": "A", "phones": ["555-0101"]},
        {"name": "A", "phones": [{"number": 5550101}]},
        {"name": "A", "phones": [{"number": "555", "kind": "pager"}]},
        {"name": "A", "phones": [{"number": "555", "extension": "1"}]},
        {"name": "A", "phones": [{"number": "call me"}]},
        {"name": "A", "phones": [{"number": str(n)} for n in range(4)]},
        {"name": "A", "email": "not an address"},
        {"name": "A", "passcode": "x"},
        {"name": "A", "passcode": 1234},
        {"name": "A", "lists": [3]},
        {"name": "A", "lists": ["NO SPACES"]},
        {"name": "A", "shoe_size": 9},
        {"name": "A", "email": "a@example.com\r\nBcc: b@example.com"},
        {"name": "A", "email": "a@example.com", "notify": "alarm", "notify_by": ["email"]},
        {"name": "A", "email": "a@example.com", "notify": [1], "notify_by": ["email"]},
        {"name": "A", "email": "a@example.com", "notify": ["burglary"], "notify_by": ["email"]},
        {"name": "A", "email": "a@example.com", "notify": ["alarm"], "notify_by": ["fax"]},
        {"name": "A", "email": "a@example.com", "notify": ["alarm"]},
        {"name": "A", "notify": ["alarm"], "notify_by": ["email"]},
        {
            "name": "A",
            "phones": [{"number": "555", "kind": "home"}],
            "notify": ["alarm"],
            "notify_by": ["sms"],
        },
    ],
)
def test_a_bad_contact_is_422_and_changes_nothing(hub: ApiHub, body: dict[str, Any]) -> None:
    problem(hub.call("admin", "POST", "/accounts/700005/contacts", body), 422, "API-INPUT")
    assert hub.ok("admin", "GET", "/accounts/700005/contacts")["items"] == []
    assert hub.audit_texts("700005") == []


def test_a_contact_subscribes_to_notifications(hub: ApiHub) -> None:
    path = "/accounts/700007/contacts"
    body = {"name": "Sam", "email": "sam@example.com", "phones": [{"number": "555-0107"}],
            "notify": ["alarm", "trouble"], "notify_by": ["email", "sms"]}  # fmt: skip
    made = hub.ok("admin", "POST", path, body, status=201)
    assert (made["notify"], made["notify_by"]) == (["alarm", "trouble"], ["email", "sms"])
    changed = hub.ok("admin", "PATCH", f"{path}/{made['id']}", {"notify": ["test"]})
    assert (changed["notify"], changed["notify_by"]) == (["test"], ["email", "sms"])
    listed = hub.ok("admin", "GET", path)["items"]
    assert [(c["notify"], c["notify_by"]) for c in listed] == [(["test"], ["email", "sms"])]


def test_a_contact_name_is_unique_within_the_account(hub: ApiHub) -> None:
    path = "/accounts/700006/contacts"
    hub.ok("admin", "POST", path, {"name": "Bob"}, status=201)
    problem(hub.call("admin", "POST", path, {"name": "Bob"}), 422, "API-INPUT")


# call lists --------------------------------------------------------------------------------------


def test_a_call_list_is_set_in_order_and_read(hub: ApiHub) -> None:
    path = "/accounts/700008"
    ids = [
        hub.ok("admin", "POST", f"{path}/contacts", {"name": name}, status=201)["id"]
        for name in ("First", "Second", "Third")
    ]
    lists = hub.ok("admin", "GET", f"{path}/call-lists")["items"]
    assert lists == [{"name": "PRIMARY", "contacts": ids}]
    made = hub.call("admin", "PUT", f"{path}/call-lists/night", {"contacts": ids[::-1]})
    assert made.status_code == 201, made.text
    assert made.json() == {"name": "NIGHT", "contacts": ids[::-1]}
    stale = {"If-Match": made.headers["etag"]}
    hub.ok("admin", "PUT", f"{path}/call-lists/NIGHT", {"contacts": ids[1:]}, headers=stale)
    answer = hub.call("admin", "PUT", f"{path}/call-lists/NIGHT", {"contacts": ids},
                      headers=stale)  # fmt: skip
    problem(answer, 412, "API-ETAG")
    assert hub.ok("admin", "GET", f"{path}/call-lists")["items"] == [
        {"name": "NIGHT", "contacts": ids[1:]},
        {"name": "PRIMARY", "contacts": ids},
    ]
    contact = hub.ok("admin", "GET", f"{path}/contacts/{ids[1]}")
    assert {"name": "NIGHT", "order": 1} in contact["lists"]
    assert hub.audit_texts("700008")[-2:] == ["API admin: PUT CALL LIST NIGHT"] * 2


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("PRIMARY", {}),
        ("PRIMARY", {"contacts": "1,2"}),
        ("PRIMARY", {"contacts": [True]}),
        ("PRIMARY", {"contacts": ["1"]}),
        ("PRIMARY", {"contacts": [999_999]}),
        ("PRIMARY", {"contacts": [1, 1]}),
        ("PRIMARY", {"contacts": [], "order": "asc"}),
        ("TOO-LONG-A-LIST-NAME", {"contacts": []}),
    ],
)
def test_a_bad_call_list_is_422(hub: ApiHub, name: str, body: dict[str, Any]) -> None:
    answer = hub.call("admin", "PUT", f"/accounts/700009/call-lists/{name}", body)
    problem(answer, 422, "API-INPUT")
    assert hub.audit_texts("700009") == []


def test_another_account_s_contact_cannot_join_a_call_list(hub: ApiHub) -> None:
    theirs = hub.ok("admin", "POST", "/accounts/700011/contacts", {"name": "Eve"}, status=201)["id"]
    answer = hub.call("admin", "PUT", "/accounts/700012/call-lists/PRIMARY",
                      {"contacts": [theirs]})  # fmt: skip
    problem(answer, 422, "API-INPUT")
    problem(hub.call("admin", "GET", f"/accounts/700012/contacts/{theirs}"), 404, "API-NOTFOUND")
