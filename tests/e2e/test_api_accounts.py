"""Accounts and their response data through the integrator API (decisions section 10), on both
databases: create, read, replace and delete of accounts, zones, panel users, contacts and call
lists with their refusals, scopes, a dealer key's account range (another dealer's account answers
exactly as one that does not exist), ETag conflicts, the audit record of every change, write-only
passcodes, pagination over 10,000 accounts, and the key check itself.

The node runs in the test's process; the keys are made with ``alarmhub apikey create``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from alarmhub.store import accounts
from alarmhub.store import schema as s
from tests.support.api_station import BASE, ApiHub, api_hub, problem
from tests.support.node_hub import Row
from tests.support.processes import cli

pytestmark = pytest.mark.backends("sqlite", "postgresql")

MANY = 10_000  # accounts 800000..809999, for pagination
KEYS = {
    "admin": (("accounts:read", "accounts:write"), ""),
    "reader": (("accounts:read",), ""),
    "alarms": (("alarms:read",), ""),
    "dealer1": (("accounts:read", "accounts:write"), "7001"),
    "dealer2": (("accounts:read", "accounts:write"), "70002"),
    "gone": (("accounts:read",), ""),  # revoked
}
AGENCIES = [("SPD", "police", "SPRINGFIELD PD"), ("SFD", "fire", "SPRINGFIELD FD")]


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    data_dir = tmp_path_factory.mktemp("api_accounts")
    with api_hub(data_dir, KEYS, revoked=["gone"], agencies=AGENCIES, bulk=MANY) as hub:
        yield hub


# the key ---------------------------------------------------------------------------------------


def test_a_key_reads_its_own_name_scopes_and_range(hub: ApiHub) -> None:
    assert hub.ok("dealer1", "GET", "/key") == {
        "name": "dealer1",
        "scopes": ["accounts:read", "accounts:write"],
        "accounts": "7001",
    }


def test_no_key_a_wrong_key_and_a_revoked_key_get_the_same_401(hub: ApiHub) -> None:
    client = hub.station.client
    bodies = [
        problem(client.get(f"{BASE}/accounts/700001"), 401, "API-AUTH"),
        problem(hub.call("gone", "GET", "/accounts/700001"), 401, "API-AUTH"),
    ]
    hub.keys["wrong"] = "ahk_" + "x" * 43
    bodies.append(problem(hub.call("wrong", "GET", "/accounts/700001"), 401, "API-AUTH"))
    # a malformed key and one that was never made answer alike
    assert bodies[1] == bodies[2]
    assert all(b["code"] == "API-AUTH" for b in bodies)


# accounts --------------------------------------------------------------------------------------


def test_an_account_is_created_read_replaced_and_deleted(hub: ApiHub) -> None:
    body = {
        "name": "Corner Shop", "street": "1 High St", "city": "Springfield", "state": "IL",
        "phone": "555-0100", "agencies": {"police": "SPD", "fire": "SFD"}, "permit": "P-77",
        "test_interval": 24, "duress_code": "help123",
    }  # fmt: skip
    created = hub.call("admin", "PUT", "/accounts/700101", body)
    assert created.status_code == 201, created.text
    resource = created.json()
    assert resource == {
        "account": "700101", "name": "Corner Shop", "street": "1 High St",
        "city": "Springfield", "state": "IL", "phone": "555-0100",
        "agencies": {"police": "SPD", "fire": "SFD", "medical": None}, "permit": "P-77",
        "test_interval": 24, "has_duress_code": True,
    }  # fmt: skip
    assert "help123" not in created.text
    read = hub.call("admin", "GET", "/accounts/700101")
    assert read.json() == resource and read.headers["etag"] == created.headers["etag"]

    replaced = hub.ok("admin", "PUT", "/accounts/700101", {"name": "Corner Shop Ltd"})
    assert replaced["name"] == "Corner Shop Ltd" and replaced["street"] == ""
    assert replaced["agencies"] == {"police": None, "fire": None, "medical": None}
    assert replaced["test_interval"] is None and replaced["permit"] == ""
    assert replaced["has_duress_code"] is True  # kept unless named: null clears it
    cleared = hub.ok("admin", "PUT", "/accounts/700101", {"name": "X", "duress_code": None})
    assert cleared["has_duress_code"] is False

    assert hub.call("admin", "DELETE", "/accounts/700101").status_code == 204
    problem(hub.call("admin", "GET", "/accounts/700101"), 404, "API-NOTFOUND")
    problem(hub.call("admin", "DELETE", "/accounts/700101"), 404, "API-NOTFOUND")
    assert hub.audit_texts("700101") == [
        "API admin: PUT ACCOUNT",
        "API admin: PUT ACCOUNT",
        "API admin: PUT ACCOUNT",
        "API admin: DELETE ACCOUNT",
    ]


@pytest.mark.parametrize(
    "content",
    [b"[1, 2]", b'"name"', b"42", b"null", b"{not json", b"", b"\xff\xfe"],
    ids=["array", "string", "number", "null", "broken", "empty", "not utf-8"],
)
def test_a_body_that_is_not_a_json_object_is_422(hub: ApiHub, content: bytes) -> None:
    answer = hub.call("admin", "PUT", "/accounts/700102", content=content)
    problem(answer, 422, "API-INPUT")
    problem(hub.call("admin", "GET", "/accounts/700102"), 404, "API-NOTFOUND")


@pytest.mark.parametrize(
    "body",
    [
        {"name": 5},
        {"name": "A", "street": ["x"]},
        {"name": "A", "test_interval": "24"},
        {"name": "A", "test_interval": True},
        {"name": "A", "agencies": "SPD"},
        {"name": "A", "agencies": {"police": 7}},
        {"name": "A", "duress_code": 1234},
    ],
)
def test_a_member_of_the_wrong_type_is_422(hub: ApiHub, body: Row) -> None:
    problem(hub.call("admin", "PUT", "/accounts/700103", body), 422, "API-INPUT")


@pytest.mark.parametrize(
    "body",
    [
        {"street": "no name"},
        {"name": ""},
        {"name": "A", "colour": "red"},
        {"name": "A", "state": "S" * 31},
        {"name": "A\x00"},
        {"name": "A", "agencies": {"police": "NOPE"}},
        {"name": "A", "agencies": {"fire": "SPD"}},
        {"name": "A", "agencies": {"army": "SPD"}},
        {"name": "A", "agencies": {"police": "S\u0000PD"}},
        {"name": "A", "test_interval": -1},
        {"name": "A", "test_interval": 1e300},
        {"name": "A", "test_interval": 1e308},  # hours finite, seconds not
        {"name": "A", "test_interval": 10**400},
        {"name": "A", "phone": "call me"},
        {"name": "A", "duress_code": "x"},
    ],
)
def test_a_bad_value_or_an_unknown_member_is_422_and_changes_nothing(
    hub: ApiHub, body: Row
) -> None:
    problem(hub.call("admin", "PUT", "/accounts/700104", body), 422, "API-INPUT")
    problem(hub.call("admin", "GET", "/accounts/700104"), 404, "API-NOTFOUND")
    assert hub.audit_texts("700104") == []


@pytest.mark.parametrize("number", ["7001234567", "70%00", "70%C3%A9", "70%20"])
def test_a_bad_account_number_is_422_to_create_and_404_to_read(hub: ApiHub, number: str) -> None:
    problem(hub.call("admin", "PUT", f"/accounts/{number}", {"name": "A"}), 422, "API-INPUT")
    problem(hub.call("admin", "GET", f"/accounts/{number}"), 404, "API-NOTFOUND")
    problem(hub.call("admin", "GET", f"/accounts/{number}/zones"), 404, "API-NOTFOUND")


def test_a_stale_etag_is_412_and_the_current_one_goes_ahead(hub: ApiHub) -> None:
    first = hub.call("admin", "PUT", "/accounts/700105", {"name": "One"})
    tag = first.headers["etag"]
    second = hub.call(
        "admin", "PUT", "/accounts/700105", {"name": "Two"}, headers={"If-Match": tag}
    )
    assert second.status_code == 200, second.text
    stale = {"If-Match": tag}
    problem(
        hub.call("admin", "PUT", "/accounts/700105", {"name": "Three"}, headers=stale),
        412,
        "API-ETAG",
    )
    problem(hub.call("admin", "DELETE", "/accounts/700105", headers=stale), 412, "API-ETAG")
    assert hub.ok("admin", "GET", "/accounts/700105")["name"] == "Two"
    missing = {"If-Match": tag}
    answer = hub.call("admin", "PUT", "/accounts/700106", {"name": "N"}, headers=missing)
    problem(answer, 412, "API-ETAG")
    current = {"If-Match": second.headers["etag"]}
    assert hub.call("admin", "DELETE", "/accounts/700105", headers=current).status_code == 204


def test_an_account_with_an_open_alarm_is_not_deleted(hub: ApiHub) -> None:
    hub.post("700007")
    problem(hub.call("admin", "DELETE", "/accounts/700007"), 409, "API-CONFLICT")
    assert hub.ok("admin", "GET", "/accounts/700007")["account"] == "700007"
    assert "API admin: DELETE ACCOUNT" not in hub.audit_texts("700007")


def test_scopes_are_checked(hub: ApiHub) -> None:
    problem(hub.call("reader", "PUT", "/accounts/700108", {"name": "A"}), 403, "API-SCOPE")
    problem(hub.call("reader", "DELETE", "/accounts/700001"), 403, "API-SCOPE")
    problem(hub.call("reader", "PUT", "/accounts/700001/zones/1", {}), 403, "API-SCOPE")
    problem(hub.call("reader", "POST", "/accounts/700001/contacts", {}), 403, "API-SCOPE")
    problem(hub.call("alarms", "GET", "/accounts/700001"), 403, "API-SCOPE")
    problem(hub.call("alarms", "GET", "/accounts"), 403, "API-SCOPE")
    assert hub.ok("reader", "GET", "/accounts/700001")["account"] == "700001"


# a dealer's range ------------------------------------------------------------------------------


FOREIGN, ABSENT = "700021", "700199"  # dealer2's account; one in dealer1's range that is not
NOWHERE = "700299"  # in neither range, and not an account


@pytest.mark.parametrize(
    ("method", "tail", "body"),
    [
        ("GET", "", None),
        ("PUT", "", {"name": "Taken Over"}),
        ("DELETE", "", None),
        ("GET", "/zones", None),
        ("GET", "/zones/1", None),
        ("PUT", "/zones/1", {"description": "DOOR"}),
        ("DELETE", "/zones/1", None),
        ("GET", "/users", None),
        ("PUT", "/users/1", {"name": "JOHN"}),
        ("GET", "/contacts", None),
        ("POST", "/contacts", {"name": "Mallory"}),
        ("GET", "/call-lists", None),
        ("PUT", "/call-lists/PRIMARY", {"contacts": []}),
    ],
)
def test_a_dealer_key_cannot_tell_another_dealer_s_account_exists(
    hub: ApiHub, method: str, tail: str, body: Row | None
) -> None:
    missing = NOWHERE if (method, tail) == ("PUT", "") else ABSENT  # a PUT in range creates
    with hub.engine.connect() as conn:
        assert accounts.account_row(conn, FOREIGN) is not None
        assert accounts.account_row(conn, missing) is None
    theirs = hub.call("dealer1", method, f"/accounts/{FOREIGN}{tail}", body)
    absent = hub.call("dealer1", method, f"/accounts/{missing}{tail}", body)
    problem(absent, 404, "API-NOTFOUND")
    assert theirs.status_code == 404
    assert theirs.headers == absent.headers
    assert theirs.content == absent.content.replace(missing.encode(), FOREIGN.encode())
    assert hub.ok("admin", "GET", f"/accounts/{FOREIGN}")["name"] == "Subscriber 21"
    assert hub.audit_texts(FOREIGN) == []


def test_a_dealer_key_creates_only_in_its_range_and_lists_only_it(hub: ApiHub) -> None:
    outside = hub.call("dealer1", "PUT", "/accounts/700099", {"name": "A"})
    problem(outside, 404, "API-NOTFOUND")
    problem(hub.call("admin", "GET", "/accounts/700099"), 404, "API-NOTFOUND")
    made = hub.call("dealer1", "PUT", "/accounts/700150", {"name": "Dealer Site"})
    assert made.status_code == 201, made.text
    hub.ok("dealer1", "PUT", "/accounts/700151", {"name": "Dealer Site 2"}, status=201)
    listed = hub.ok("dealer1", "GET", "/accounts", params={"limit": 1})
    assert [a["account"] for a in listed["items"]] == ["700150"] or listed["items"][0][
        "account"
    ].startswith("7001")
    everything = hub.ok("dealer1", "GET", "/accounts", params={"limit": 1000})
    numbers = [a["account"] for a in everything["items"]]
    assert {"700150", "700151"} <= set(numbers) and numbers == sorted(numbers)
    assert all(n.startswith("7001") for n in numbers) and everything["next_cursor"] is None
    assert hub.audit_texts("700150") == ["API dealer1: PUT ACCOUNT"]


# pagination ------------------------------------------------------------------------------------


def test_every_account_is_on_exactly_one_page_in_order(hub: ApiHub) -> None:
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
        answer = hub.ok("admin", "GET", "/accounts", params=params)
        assert len(answer["items"]) <= 1000
        seen += [a["account"] for a in answer["items"]]
        pages += 1
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    with hub.engine.connect() as conn:
        everyone = list(
            conn.execute(
                select(s.account.c.account_number).order_by(s.account.c.account_number)
            ).scalars()
        )
    bulk = [n for n in seen if n.startswith("8")]
    assert bulk == [f"8{n:05d}" for n in range(MANY)]
    assert seen == everyone and len(set(seen)) == len(seen)
    assert pages == len(everyone) // 1000 + 1


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=ten", "cursor=x", "cursor=_w"])
def test_a_bad_page_request_is_422(hub: ApiHub, query: str) -> None:
    problem(hub.call("admin", "GET", f"/accounts?{query}"), 422, "API-INPUT")


def test_the_command_line_removes_an_account_as_the_api_does(hub: ApiHub) -> None:
    gone = hub.call("admin", "PUT", "/accounts/700107/zones/1", {"description": "D"})
    problem(gone, 404, "API-NOTFOUND")
    hub.ok("admin", "PUT", "/accounts/700107", {"name": "Short Lived"}, status=201)
    hub.ok("admin", "PUT", "/accounts/700107/zones/1", {"description": "D"}, status=201)
    cli(hub.station.data_dir, "account", "remove", "700107")
    problem(hub.call("admin", "GET", "/accounts/700107"), 404, "API-NOTFOUND")
    hub.ok("admin", "PUT", "/accounts/700107", {"name": "Back Again"}, status=201)
    assert hub.ok("admin", "GET", "/accounts/700107/zones")["items"] == []
    refusal = cli(hub.station.data_dir, "account", "remove", "700199", check=False)
    assert refusal.returncode != 0 and "no account" in refusal.stderr
