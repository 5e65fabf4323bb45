"""Response data through the command line (decisions section 7), on both databases: zones,
panel users, contacts and their call lists, agencies, ``account set``, ``alarmtype set
--contact-list`` and the CSV imports of each."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from alarmhub.cli.csv_import import FORMATS, import_csv
from alarmhub.store import engine as store_engine
from tests.support.database import database_url, db_rows
from tests.support.processes import as_dict, as_list, cli, cli_json

pytestmark = pytest.mark.backends("sqlite", "postgresql")

PASSCODE_ENV = "ALARMHUB_PASSCODE"
DURESS_ENV = "ALARMHUB_DURESS_CODE"


@pytest.fixture(autouse=True)
def no_secrets_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands read secrets from the environment: none from outside the test."""
    monkeypatch.delenv(PASSCODE_ENV, raising=False)
    monkeypatch.delenv(DURESS_ENV, raising=False)


def fails(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 1 with one ``error:`` line on stderr and nothing on stdout; the line."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout.strip() == ""
    return lines[0]


def station(data_dir: Path, *accounts: str) -> Path:
    for number in accounts or ("A1",):
        cli(data_dir, "account", "add", number, "--name", f"Company {number}")
    return data_dir


def imported(data_dir: Path, kind: str, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = data_dir / f"{kind}s.csv"
    path.write_text(text)
    return cli(data_dir, kind, "import", str(path), *extra, check=False)


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return as_dict(json.loads(result.stdout))


def refused_lines(result: subprocess.CompletedProcess[str]) -> list[int]:
    return [int(line.split(":")[1]) for line in result.stderr.strip().splitlines()]


# zones ---------------------------------------------------------------------------------------


def test_zone_set_list_and_remove(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    done = cli(tmp_path, "zone", "set", "A1", "15", "--description", "BACK DOOR")
    assert done.stdout == "account A1 zone 015 set\n"
    assert cli_json(
        tmp_path,
        "zone",
        "set",
        "A1",
        "3",
        "--area",
        "1",
        "--description",
        "HALL",
        "--equipment",
        "PIR",
    ) == {"zone": "003", "area": "01", "description": "HALL", "equipment": "PIR"}
    cli(tmp_path, "zone", "set", "A1", "015", "--description", "REAR DOOR")  # changes zone 015

    assert cli_json(tmp_path, "zone", "list", "A1") == [
        {"zone": "003", "area": "01", "description": "HALL", "equipment": "PIR"},
        {"zone": "015", "area": "", "description": "REAR DOOR", "equipment": ""},
    ]
    human = cli(tmp_path, "zone", "list", "A1").stdout
    assert "DESCRIPTION" in human and "REAR DOOR" in human and "all" in human

    assert "no zone 3" in fails(cli(tmp_path, "zone", "remove", "A1", "3", check=False))
    cli(tmp_path, "zone", "remove", "A1", "3", "--area", "01")
    assert cli_json(tmp_path, "zone", "remove", "A1", "15") == {
        "account_number": "A1",
        "zone": "015",
        "area": "",
        "removed": True,
    }
    assert cli(tmp_path, "zone", "list", "A1").stdout.strip() == "account A1 has no zones"


def test_zone_set_refuses_what_cannot_be_kept(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    cases = [
        (("A9", "1", "--description", "X"), "no account 'A9'"),
        (("A1", "1000", "--description", "X"), "zone must be a number"),
        (("A1", "1", "--description", "X", "--area", "100"), "area must be a number"),
        (("A1", "1", "--description", " "), "description must not be empty"),
    ]
    for args, error in cases:
        assert error in fails(cli(tmp_path, "zone", "set", *args, check=False))
    assert "no account 'A9'" in fails(cli(tmp_path, "zone", "list", "A9", check=False))
    assert cli_json(tmp_path, "zone", "list", "A1") == []


# panel users ---------------------------------------------------------------------------------


def test_user_set_list_and_remove(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    assert cli(tmp_path, "user", "set", "A1", "2", "--name", "JOHN SMITH").stdout == (
        "account A1 user 002 set\n"
    )
    assert cli_json(tmp_path, "user", "set", "A1", "10", "--name", "JANE DOE") == {
        "user": "010",
        "name": "JANE DOE",
    }
    cli(tmp_path, "user", "set", "A1", "002", "--name", "JOHN Q SMITH")
    assert cli_json(tmp_path, "user", "list", "A1") == [
        {"user": "002", "name": "JOHN Q SMITH"},
        {"user": "010", "name": "JANE DOE"},
    ]
    assert "JOHN Q SMITH" in cli(tmp_path, "user", "list", "A1").stdout

    cli(tmp_path, "user", "remove", "A1", "2")
    assert "no user 2" in fails(cli(tmp_path, "user", "remove", "A1", "2", check=False))
    assert "user must be a number" in fails(
        cli(tmp_path, "user", "set", "A1", "x", "--name", "N", check=False)
    )
    assert [u["user"] for u in as_list(cli_json(tmp_path, "user", "list", "A1"))] == ["010"]


# agencies and account set --------------------------------------------------------------------


def agencies(data_dir: Path) -> None:
    cli(data_dir, "agency", "add", "SPD", "--kind", "police", "--name", "Springfield PD")
    cli(data_dir, "agency", "add", "SFD", "--kind", "fire", "--name", "Springfield FD")
    cli(data_dir, "agency", "add", "EMS1", "--kind", "medical", "--name", "County EMS")


def test_agency_add_changes_and_lists(backend: str, tmp_path: Path) -> None:
    assert cli(tmp_path, "agency", "list").stdout.strip() == "no agencies"
    agencies(tmp_path)
    assert cli_json(
        tmp_path,
        "agency",
        "add",
        "SPD",
        "--kind",
        "police",
        "--name",
        "Springfield Police",
        "--phone",
        "555-0199",
    ) == {"code": "SPD", "kind": "police", "name": "Springfield Police", "phone": "555-0199"}
    listed = as_list(cli_json(tmp_path, "agency", "list"))
    assert [(a["code"], a["kind"]) for a in listed] == [
        ("SFD", "fire"),
        ("EMS1", "medical"),
        ("SPD", "police"),
    ]
    assert "Springfield Police" in cli(tmp_path, "agency", "list").stdout
    assert "agency code" in fails(
        cli(tmp_path, "agency", "add", "S D", "--kind", "fire", "--name", "x", check=False)
    )
    bad_kind = cli(tmp_path, "agency", "add", "X", "--kind", "army", "--name", "x", check=False)
    assert bad_kind.returncode == 2


def test_account_set_assigns_agencies_and_permit(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    agencies(tmp_path)
    shown = as_dict(
        cli_json(
            tmp_path, "account", "set", "A1", "--police", "SPD", "--fire", "SFD", "--permit", "P-77"
        )
    )
    assert [a["code"] for a in shown["agencies"]] == ["SPD", "SFD"]
    assert shown["permit"] == "P-77"
    assert shown["has_duress_code"] is False

    assert "agency 'SFD' is fire, not police" in fails(
        cli(tmp_path, "account", "set", "A1", "--police", "SFD", check=False)
    )
    assert "no agency 'NOPE'" in fails(
        cli(tmp_path, "account", "set", "A1", "--medical", "NOPE", check=False)
    )
    assert "no account 'A9'" in fails(
        cli(tmp_path, "account", "set", "A9", "--police", "SPD", check=False)
    )
    # '' unassigns; what is not named stays
    shown = as_dict(cli_json(tmp_path, "account", "set", "A1", "--fire", "", "--medical", "EMS1"))
    assert [a["code"] for a in shown["agencies"]] == ["SPD", "EMS1"]
    assert shown["permit"] == "P-77"
    assert as_dict(cli_json(tmp_path, "account", "set", "A1", "--permit", ""))["permit"] == ""


def test_account_set_prints_the_agencies_permit_phone_and_duress_code(
    backend: str, tmp_path: Path
) -> None:
    """What docs/accounts.md says it prints, on its own lines ('-' for none)."""
    station(tmp_path)
    agencies(tmp_path)
    cli(
        tmp_path,
        "agency",
        "add",
        "SPD",
        "--kind",
        "police",
        "--name",
        "Springfield PD",
        "--phone",
        "555-0199",
    )
    shown = cli(
        tmp_path,
        "account",
        "set",
        "A1",
        "--police",
        "SPD",
        "--medical",
        "EMS1",
        "--permit",
        "P-2026-0042",
        env={DURESS_ENV: "help-me-1"},
    ).stdout
    assert shown.splitlines() == [
        "account A1 set",
        "  police       SPD: Springfield PD, 555-0199",
        "  fire         -",
        "  medical      EMS1: County EMS",
        "  permit       P-2026-0042",
        "  phone        -",
        "  duress code  yes",
    ]
    cleared = cli(tmp_path, "account", "set", "A1", "--police", "", "--clear-duress-code").stdout
    assert "  police       -\n" in cleared and cleared.endswith("  duress code  no\n")


def duress_hash(data_dir: Path) -> str | None:
    [row] = db_rows(data_dir, "SELECT duress_hash FROM account WHERE account_number = ?", "A1")
    return None if row["duress_hash"] is None else str(row["duress_hash"])


def test_account_import_assigns_agencies_and_permits(backend: str, tmp_path: Path) -> None:
    agencies(tmp_path)
    text = (
        "account,name,police,fire,medical,permit\n"
        "A1,One,SPD,SFD,EMS1,P-1\n"
        "A2,Two,SFD,,,\n"
        "A3,Three,,,,P-3\n"
        "A4,Four,NOPE,,,\n"
    )
    first = imported(tmp_path, "account", text)
    assert first.returncode == 1 and refused_lines(first) == [3, 5]
    assert "agency 'SFD' is fire, not police" in first.stderr
    assert "no agency 'NOPE'" in first.stderr
    assert "accounts added 2, updated 0, rows refused 2" in first.stdout
    one = as_dict(cli_json(tmp_path, "account", "set", "A1"))
    assert [a["code"] for a in one["agencies"]] == ["SPD", "SFD", "EMS1"]
    assert one["permit"] == "P-1"
    assert as_dict(cli_json(tmp_path, "account", "set", "A3"))["permit"] == "P-3"

    again = report(imported(tmp_path, "account", text, "--json"))
    assert (again["added"], again["updated"], len(again["refused"])) == (0, 2, 2)
    assert cli_json(tmp_path, "account", "set", "A1") == one
    # an empty field clears; a column left out changes nothing
    imported(tmp_path, "account", "account,name,fire\nA1,One,\n")
    after = as_dict(cli_json(tmp_path, "account", "set", "A1"))
    assert [a["code"] for a in after["agencies"]] == ["SPD", "EMS1"]
    assert after["permit"] == "P-1"


def test_account_set_duress_code_from_environment_or_standard_input(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path)
    shown = cli(tmp_path, "account", "set", "A1", "--json", env={DURESS_ENV: "help-me-1"}).stdout
    assert json.loads(shown)["has_duress_code"] is True
    first = duress_hash(tmp_path)
    assert first is not None and first.startswith("$argon2")
    assert "help-me-1" not in first and first not in shown

    cli(tmp_path, "account", "set", "A1", "--duress-code", "-", stdin="other-9\nignored\n")
    second = duress_hash(tmp_path)
    assert second is not None and second != first

    assert "no duress code given" in fails(
        cli(tmp_path, "account", "set", "A1", "--duress-code", "-", stdin="", check=False)
    )
    assert "passcode is 3-32" in fails(
        cli(tmp_path, "account", "set", "A1", "--duress-code", "-", stdin="ab\n", check=False)
    )
    assert "not both" in fails(
        cli(
            tmp_path,
            "account",
            "set",
            "A1",
            "--clear-duress-code",
            env={DURESS_ENV: "x1234"},
            check=False,
        )
    )
    cleared = as_dict(cli_json(tmp_path, "account", "set", "A1", "--clear-duress-code"))
    assert cleared["has_duress_code"] is False
    assert duress_hash(tmp_path) is None


# contacts ------------------------------------------------------------------------------------


def contact(data_dir: Path, *args: str, **kwargs: Any) -> dict[str, Any]:
    return as_dict(json.loads(cli(data_dir, "contact", *args, "--json", **kwargs).stdout))


def test_contact_add_list_update_and_remove(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    jane = contact(
        tmp_path,
        "add",
        "A1",
        "--name",
        "Jane Roe",
        "--phone",
        "555-0100",
        "--phone",
        "home:555-0101",
        "--email",
        "jane@example.org",
        "--relation",
        "owner",
        "--notes",
        "has the keys",
    )
    assert jane["phones"] == [
        {"number": "555-0100", "kind": "mobile"},
        {"number": "555-0101", "kind": "home"},
    ]
    assert jane["lists"] == [{"name": "PRIMARY", "order": 1}]  # no --list: last on PRIMARY
    assert (jane["email"], jane["relation"], jane["notes"]) == (
        "jane@example.org",
        "owner",
        "has the keys",
    )
    bob = contact(
        tmp_path,
        "add",
        "A1",
        "--name",
        "Bob",
        "--phone",
        "work:555-0102",
        "--list",
        "primary",
        "--list",
        "keyholders:1",
    )
    assert bob["lists"] == [{"name": "KEYHOLDERS", "order": 1}, {"name": "PRIMARY", "order": 2}]
    al = contact(tmp_path, "add", "A1", "--name", "Al", "--phone", "555-0103", "--order", "1")
    assert al["lists"] == [{"name": "PRIMARY", "order": 1}]

    listed = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    assert [c["name"] for c in listed] == ["Al", "Jane Roe", "Bob"]  # in calling order
    assert [c["lists"] for c in listed] == [
        [{"name": "PRIMARY", "order": 1}],
        [{"name": "PRIMARY", "order": 2}],
        [{"name": "KEYHOLDERS", "order": 1}, {"name": "PRIMARY", "order": 3}],
    ]
    for row in listed:
        assert {"id", "name", "phones", "lists", "has_passcode"} <= set(row)
    human = cli(tmp_path, "contact", "list", "A1").stdout
    assert "home:555-0101" in human and "KEYHOLDERS:1" in human

    changed = contact(
        tmp_path,
        "update",
        "A1",
        str(jane["id"]),
        "--phone",
        "work:555-0199",
        "--list",
        "keyholders:1",
        "--relation",
        "manager",
    )
    assert changed["phones"] == [{"number": "555-0199", "kind": "work"}]  # every number replaced
    assert changed["relation"] == "manager" and changed["email"] == "jane@example.org"
    assert {"name": "KEYHOLDERS", "order": 1} in changed["lists"]
    moved = contact(tmp_path, "update", "A1", str(bob["id"]), "--off-list", "KEYHOLDERS")
    assert [place["name"] for place in moved["lists"]] == ["PRIMARY"]

    result = cli(tmp_path, "contact", "remove", "A1", str(al["id"]))
    assert result.stdout == f"account A1 contact {al['id']} removed\n"
    assert "no contact" in fails(
        cli(tmp_path, "contact", "remove", "A1", str(al["id"]), check=False)
    )
    assert [c["name"] for c in as_list(cli_json(tmp_path, "contact", "list", "A1"))] == [
        "Jane Roe",
        "Bob",
    ]


def test_contact_refuses_what_cannot_be_kept(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    contact(tmp_path, "add", "A1", "--name", "Jane", "--phone", "555-0100")
    add = ("contact", "add", "A1", "--name")
    cases = [
        ((*add, "Jane", "--phone", "1"), "already has a contact named 'Jane'"),
        ((*add, "X", "--phone", "fax:1"), "phone kind 'fax' is not one of mobile, home, work"),
        ((*add, "X", "--phone", "call me"), "may hold only digits"),
        ((*add, "X", *["--phone", "1"] * 4), "at most 3 phone numbers"),
        ((*add, "X", "--list", "no such list!"), "call list name"),
        ((*add, "X", "--list", "A:0"), "order is 1-999"),
        ((*add, "X", "--list", "A", "--list", "B", "--order", "2"), "--order goes with one"),
        ((*add, "X", "--list", "A:1", "--order", "2"), "names its order"),
        (("contact", "add", "A9", "--name", "X"), "no account 'A9'"),
        (("contact", "update", "A1", "99", "--name", "Y"), "has no contact 99"),
        (("contact", "list", "A9"), "no account 'A9'"),
    ]
    for args, error in cases:
        assert error in fails(cli(tmp_path, *args, check=False)), args


def stored_passcode(data_dir: Path, name: str) -> str | None:
    [row] = db_rows(data_dir, "SELECT passcode_hash FROM contact WHERE name = ?", name)
    return None if row["passcode_hash"] is None else str(row["passcode_hash"])


def test_contact_passcode_from_environment_or_standard_input_never_shown(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path)
    jane = contact(tmp_path, "add", "A1", "--name", "Jane", env={PASSCODE_ENV: "open-sesame"})
    assert jane["has_passcode"] is True
    jane_hash = stored_passcode(tmp_path, "Jane")
    assert jane_hash is not None and jane_hash.startswith("$argon2")

    bob = contact(tmp_path, "add", "A1", "--name", "Bob", "--passcode", "-", stdin="4321\n")
    assert bob["has_passcode"] is True
    contact(tmp_path, "add", "A1", "--name", "Al")
    bob_hash = stored_passcode(tmp_path, "Bob")
    assert bob_hash is not None and stored_passcode(tmp_path, "Al") is None

    listed = cli(tmp_path, "contact", "list", "A1", "--json").stdout
    for secret in ("open-sesame", "4321", jane_hash, bob_hash, "argon2", "passcode_hash"):
        assert secret not in listed
    assert [c["has_passcode"] for c in json.loads(listed)] == [True, True, False]  # Jane, Bob, Al
    assert "argon2" not in cli(tmp_path, "contact", "list", "A1").stdout

    contact(tmp_path, "update", "A1", str(bob["id"]), "--passcode", "-", stdin="9876\n")
    assert stored_passcode(tmp_path, "Bob") not in (None, bob_hash)
    cleared = contact(tmp_path, "update", "A1", str(bob["id"]), "--clear-passcode")
    assert cleared["has_passcode"] is False and stored_passcode(tmp_path, "Bob") is None

    assert "passcode is 3-32" in fails(
        cli(
            tmp_path,
            "contact",
            "add",
            "A1",
            "--name",
            "X",
            "--passcode",
            "-",
            stdin="1\n",
            check=False,
        )
    )
    assert "not both" in fails(
        cli(
            tmp_path,
            "contact",
            "update",
            "A1",
            str(jane["id"]),
            "--clear-passcode",
            env={PASSCODE_ENV: "12345"},
            check=False,
        )
    )


# alarm types ---------------------------------------------------------------------------------


def test_alarmtype_set_contact_list(backend: str, tmp_path: Path) -> None:
    row = as_dict(cli_json(tmp_path, "alarmtype", "set", "130", "--contact-list", "keyholders"))
    assert row["contact_list"] == "KEYHOLDERS"
    [listed] = as_list(cli_json(tmp_path, "alarmtype", "list", "--code", "130"))
    assert listed["contact_list"] == "KEYHOLDERS" and listed["overridden"] is True
    human = cli(tmp_path, "alarmtype", "list", "--code", "130", "--code", "131").stdout
    assert "CONTACT LIST" in human and "KEYHOLDERS" in human and "PRIMARY" in human

    assert "call list name" in fails(
        cli(tmp_path, "alarmtype", "set", "130", "--contact-list", "two words", check=False)
    )
    cli(tmp_path, "alarmtype", "set", "130", "--contact-list", "")  # back to PRIMARY
    [listed] = as_list(cli_json(tmp_path, "alarmtype", "list", "--code", "130"))
    assert listed["contact_list"] == ""


# imports -------------------------------------------------------------------------------------

ZONES = """Account,Zone,Area,Description,Equipment
A1,1,,FRONT DOOR,contact
A1,1000,,BAD ZONE,
ZZ,2,,NO SUCH ACCOUNT,
A1,2,1,HALL,PIR,extra field

A1,3,,,
A1,4,02,GARAGE
A2,15,,BACK DOOR,
"""


def test_zone_import_keeps_good_rows_reports_bad_ones_and_imports_again(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path, "A1", "A2")
    first = imported(tmp_path, "zone", ZONES)
    assert first.returncode == 1
    assert refused_lines(first) == [3, 4, 5, 7]
    errors = first.stderr.splitlines()
    assert "zone must be a number" in errors[0] and "no account 'ZZ'" in errors[1]
    assert "more fields" in errors[2] and "description must not be empty" in errors[3]
    assert "zones added 3, updated 0, rows refused 4" in first.stdout

    again = imported(tmp_path, "zone", ZONES, "--json")
    assert again.returncode == 1
    assert report(again) == {
        "added": 0,
        "updated": 3,
        "refused": [
            {"line": 3, "error": "zone must be a number from 000 to 999"},
            {"line": 4, "error": "no account 'ZZ'"},
            {"line": 5, "error": "more fields than the header names"},
            {"line": 7, "error": "description must not be empty"},
        ],
    }
    assert cli_json(tmp_path, "zone", "list", "A1") == [
        {"zone": "001", "area": "", "description": "FRONT DOOR", "equipment": "contact"},
        {"zone": "004", "area": "02", "description": "GARAGE", "equipment": ""},
    ]
    assert as_list(cli_json(tmp_path, "zone", "list", "A2"))[0]["description"] == "BACK DOOR"


def test_user_import(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    text = "account,user,name\nA1,1,JOHN SMITH\nA1,abc,NOBODY\nA1,2,\nA1,3,JANE DOE\n"
    first = imported(tmp_path, "user", text)
    assert first.returncode == 1 and refused_lines(first) == [3, 4]
    assert "panel users added 2, updated 0, rows refused 2" in first.stdout
    good = "account,user,name\nA1,1,JOHN Q SMITH\nA1,3,JANE DOE\n"
    assert report(imported(tmp_path, "user", good, "--json")) == {
        "added": 0,
        "updated": 2,
        "refused": [],
    }
    assert cli_json(tmp_path, "user", "list", "A1") == [
        {"user": "001", "name": "JOHN Q SMITH"},
        {"user": "003", "name": "JANE DOE"},
    ]


CONTACTS = """account,name,phone1,kind1,phone2,kind2,email,relation,notes,list,order
A1,Jane,555-0100,home,555-0101,,jane@example.org,owner,keys,,
A1,Jane,555-0100,home,555-0101,,jane@example.org,owner,keys,keyholders,1
A1,Bob,555-0102,fax,,,,,,,
A1,Al,555-0103,,,,,,,,x
A1,Cy,,work,,,,,,,
A1,Di,555-0104,,,,,,,keyholders,
A9,Ed,555-0105,,,,,,,,
"""


def test_contact_import_places_contacts_on_lists_and_imports_again(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path)
    first = imported(tmp_path, "contact", CONTACTS)
    assert first.returncode == 1
    assert refused_lines(first) == [4, 5, 6, 8]
    errors = first.stderr.splitlines()
    assert "phone kind 'fax'" in errors[0] and "order is 1-999" in errors[1]
    assert "kind1 is given without phone1" in errors[2] and "no account 'A9'" in errors[3]
    assert "contacts added 2, updated 0, rows refused 4" in first.stdout
    before = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    assert [(c["name"], c["lists"]) for c in before] == [
        ("Jane", [{"name": "KEYHOLDERS", "order": 1}, {"name": "PRIMARY", "order": 1}]),
        ("Di", [{"name": "KEYHOLDERS", "order": 2}]),
    ]
    assert before[0]["phones"] == [
        {"number": "555-0100", "kind": "home"},
        {"number": "555-0101", "kind": "mobile"},
    ]

    again = report(imported(tmp_path, "contact", CONTACTS, "--json"))
    assert (again["added"], again["updated"]) == (0, 2)
    assert [r["line"] for r in again["refused"]] == [4, 5, 6, 8]
    assert cli_json(tmp_path, "contact", "list", "A1") == before


def test_contact_list_is_in_calling_order(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    for name, lists in [("Ann", ["night:1"]), ("Bea", ["primary:2"]), ("Cy", ["fire:1"]),
                        ("Dee", ["fire:1", "primary:1"]), ("Eve", ["night:2"])]:  # fmt: skip
        contact(tmp_path, "add", "A1", "--name", name, *(a for x in lists for a in ("--list", x)))
    abe = contact(tmp_path, "add", "A1", "--name", "Abe")
    contact(tmp_path, "update", "A1", str(abe["id"]), "--off-list", "primary")  # on no list
    listed = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    # PRIMARY by order, then FIRE's and NIGHT's others (lists by name), then those on none
    assert [c["name"] for c in listed] == ["Dee", "Bea", "Cy", "Ann", "Eve", "Abe"]
    human = cli(tmp_path, "contact", "list", "A1").stdout.splitlines()[1:]
    assert [line.split()[1] for line in human] == ["Dee", "Bea", "Cy", "Ann", "Eve", "Abe"]


def test_contact_import_keeps_the_fields_the_file_has_no_column_for(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path)
    details = ("--phone", "home:555-0100", "--phone", "555-0101", "--email", "jane@example.org")
    jane = contact(tmp_path, "add", "A1", "--name", "Jane", *details, "--notes", "keys")
    no_phones = "account,name,relation\nA1,Jane,manager\n"
    assert report(imported(tmp_path, "contact", no_phones, "--json"))["updated"] == 1
    (listed,) = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    assert listed["phones"] == jane["phones"]  # no phone column: its numbers stay
    assert (listed["email"], listed["notes"], listed["relation"]) == (
        "jane@example.org", "keys", "manager",
    )  # fmt: skip
    assert listed["lists"] == jane["lists"]
    emptied = "account,name,email,phone1\nA1,Jane,,\n"  # an empty field of a column: cleared
    assert report(imported(tmp_path, "contact", emptied, "--json"))["updated"] == 1
    (listed,) = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    assert (listed["phones"], listed["email"], listed["notes"]) == ([], "", "keys")


def test_contact_import_places_contacts_as_contact_update_does(
    backend: str, tmp_path: Path
) -> None:
    station(tmp_path)
    jane = contact(tmp_path, "add", "A1", "--name", "Jane")  # PRIMARY 1
    contact(tmp_path, "add", "A1", "--name", "Bob")  # PRIMARY 2
    first = "account,name,list,order\nA1,Al,PRIMARY,1\nA1,Jane,,\n"
    assert report(imported(tmp_path, "contact", first, "--json"))["refused"] == []
    places = [(c["name"], c["lists"]) for c in as_list(cli_json(tmp_path, "contact", "list", "A1"))]
    assert places == [  # Al at 1: the others move down one; Jane, no order, stays where she is
        ("Al", [{"name": "PRIMARY", "order": 1}]),
        ("Jane", [{"name": "PRIMARY", "order": 2}]),
        ("Bob", [{"name": "PRIMARY", "order": 3}]),
    ]
    assert report(imported(tmp_path, "contact", first, "--json"))["updated"] == 2
    again = [(c["name"], c["lists"]) for c in as_list(cli_json(tmp_path, "contact", "list", "A1"))]
    assert again == places  # importing again changes nothing
    moved = "account,name,list,order\nA1,Bob,primary,1\nA1,Cy,primary,2\n"
    assert report(imported(tmp_path, "contact", moved, "--json"))["refused"] == []
    contact(tmp_path, "update", "A1", str(jane["id"]), "--list", "primary:1")  # the same rule
    listed = as_list(cli_json(tmp_path, "contact", "list", "A1"))
    assert [(c["name"], c["lists"]) for c in listed] == [
        (name, [{"name": "PRIMARY", "order": order}])
        for order, name in enumerate(["Jane", "Bob", "Cy", "Al"], start=1)
    ]


def test_imports_refuse_a_bad_header_and_name_their_columns(backend: str, tmp_path: Path) -> None:
    station(tmp_path)
    for kind, header in [
        ("zone", "account,zone,area"),
        ("user", "account,user,name,extra"),
        ("contact", "account,phone1"),
        ("contact", "account,name,name"),
        ("account", ""),
    ]:
        error = fails(imported(tmp_path, kind, f"{header}\nA1,1,x\n"))
        assert f"the header must name the columns {FORMATS[kind].spec}" in error, kind
    for kind, columns in [
        ("zone", "account,zone,[area],description,[equipment]"),
        ("user", "account,user,name"),
        ("contact", "account,name,[phone1],[kind1],[phone2]"),
        ("account", "account,name,[street],[city],[state],[police],[fire],[medical],[permit]"),
    ]:
        assert columns in " ".join(cli(tmp_path, kind, "import", "--help").stdout.split())
    assert cli_json(tmp_path, "zone", "list", "A1") == []


def test_import_csv_for_code_reports_progress(backend: str, tmp_path: Path) -> None:
    engine = store_engine.open_engine(database_url(tmp_path))
    path = tmp_path / "accounts.csv"
    path.write_text("account,name\n" + "".join(f"B{n},Company {n}\n" for n in range(2500)))
    seen: list[int] = []
    try:
        result = import_csv(engine, "account", path, seen.append)
        assert result == {"added": 2500, "updated": 0, "refused": []}
        assert seen == [1000, 2000, 2500]  # after each chunk: the lines read after the header
        zones = tmp_path / "zones.csv"
        zones.write_text("account,zone,description\nB1,1,DOOR\nB1,x,DOOR\n")
        assert import_csv(engine, "zone", zones) == {
            "added": 1,
            "updated": 0,
            "refused": [{"line": 3, "error": "zone must be a number from 000 to 999"}],
        }
        with pytest.raises(ValueError, match="no import of 'agency'"):
            import_csv(engine, "agency", zones)
    finally:
        engine.dispose()
