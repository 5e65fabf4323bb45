"""The command line as a user runs it: provisioning commands, ``send`` and ``heartbeat``."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from alarmhub.core import errors
from tests.support.database import on_postgres
from tests.support.processes import Station, as_dict, as_list, cli, cli_json, free_port

SUCCESS = {"status_code": 200, "status": "success"}
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43,}")


def fails(result: subprocess.CompletedProcess[str]) -> str:
    """Assert the command failed as the CLI promises: exit 1, one ``error:`` line on stderr."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    assert result.stdout.strip() == ""  # (account import's progress display may leave a newline)
    return lines[0]


def run_all(data_dir: Path, calls: list[tuple[str, ...]]) -> list[subprocess.CompletedProcess[str]]:
    """Run independent CLI calls side by side (the CLI's start-up dominates the test time);
    SQLite's busy timeout queues any writers among them."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: cli(data_dir, *args, check=False), calls))


# db ------------------------------------------------------------------------------------------


def test_db_upgrade_creates_and_is_idempotent(tmp_path: Path) -> None:
    for _ in range(2):
        result = cli(tmp_path, "db", "upgrade")
        assert result.stdout == "database is at the newest schema\n"
        assert result.returncode == 0
    if not on_postgres():
        assert (tmp_path / "alarmhub.db").is_file()
    assert cli_json(tmp_path, "signal", "list") == []


# drivers -------------------------------------------------------------------------------------


def test_driver_add_and_list(tmp_path: Path) -> None:
    assert cli(tmp_path, "driver", "list").stdout.strip() == "no drivers"
    assert cli_json(tmp_path, "driver", "list") == []

    assert cli(tmp_path, "driver", "add", "rx2").stdout == "driver rx2 added\n"
    assert cli_json(tmp_path, "driver", "add", "rx1") == {"name": "rx1"}

    listed = as_list(cli_json(tmp_path, "driver", "list"))
    assert [d["name"] for d in listed] == ["rx1", "rx2"]
    for driver in listed:
        assert set(driver) == {"name", "created"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", driver["created"])

    human = cli(tmp_path, "driver", "list").stdout
    assert "DRIVER" in human
    assert "rx1" in human
    assert "rx2" in human


def test_driver_add_refuses_a_bad_name(tmp_path: Path) -> None:
    names = ("bad name", "-rx", "rx/1", "x" * 65, "rxé", "rx:1")
    for result in run_all(tmp_path, [("driver", "add", "--", name) for name in names]):
        assert "invalid driver name" in fails(result)
    assert cli_json(tmp_path, "driver", "list") == []


def test_driver_add_refuses_a_duplicate(tmp_path: Path) -> None:
    cli(tmp_path, "driver", "add", "rx1")
    line = fails(cli(tmp_path, "driver", "add", "rx1", check=False))
    assert "already exists" in line
    line = fails(cli(tmp_path, "driver", "add", "rx1", "--json", check=False))
    assert "already exists" in line
    assert len(as_list(cli_json(tmp_path, "driver", "list"))) == 1


# tokens --------------------------------------------------------------------------------------


def test_token_create_list_revoke(tmp_path: Path) -> None:
    cli(tmp_path, "driver", "add", "rx1")
    cli(tmp_path, "driver", "add", "rx2")
    assert cli(tmp_path, "token", "list").stdout.strip() == "no tokens"

    human = cli(
        tmp_path, "token", "create", "--name", "alpha", "--driver", "rx1", "--heartbeat", "s1:rx1"
    ).stdout
    first_line, secret_line = human.strip().splitlines()
    assert first_line == "token alpha created; keep it now, it is not shown again:"
    alpha = secret_line.strip()
    assert TOKEN_RE.fullmatch(alpha)

    created = as_dict(
        cli_json(
            tmp_path,
            "token",
            "create",
            "--name",
            "beta",
            "--driver",
            "rx2",
            "--driver",
            "rx1",
            "--heartbeat",
            "a:b:rx2",
            "--heartbeat",
            "s2:rx2",
        )
    )
    assert set(created) == {"name", "token"}
    assert created["name"] == "beta"
    beta = created["token"]
    assert TOKEN_RE.fullmatch(beta)
    assert beta != alpha

    listed = as_list(cli_json(tmp_path, "token", "list"))
    assert [t["name"] for t in listed] == ["alpha", "beta"]
    for row in listed:
        assert set(row) == {"name", "drivers", "heartbeat", "created", "revoked"}
        assert row["revoked"] is None
    assert listed[0]["drivers"] == ["rx1"]
    assert listed[0]["heartbeat"] == ["s1:rx1"]
    assert listed[1]["drivers"] == ["rx1", "rx2"]
    assert listed[1]["heartbeat"] == ["a:b:rx2", "s2:rx2"]

    # the list never shows a token nor its hash
    human_list = cli(tmp_path, "token", "list").stdout
    json_list = cli(tmp_path, "token", "list", "--json").stdout
    for secret in (alpha, beta):
        digest = hashlib.sha256(secret.encode()).hexdigest()
        for text in (human_list, json_list):
            assert secret not in text
            assert digest not in text
    assert "alpha" in human_list
    assert "TOKEN" in human_list

    assert cli(tmp_path, "token", "revoke", "alpha").stdout == "token alpha revoked\n"
    assert cli_json(tmp_path, "token", "revoke", "beta") == {"name": "beta", "revoked": True}
    for row in as_list(cli_json(tmp_path, "token", "list")):
        assert row["revoked"] is not None


def test_token_create_without_grants(tmp_path: Path) -> None:
    created = as_dict(cli_json(tmp_path, "token", "create", "--name", "bare"))
    assert TOKEN_RE.fullmatch(created["token"])
    [row] = as_list(cli_json(tmp_path, "token", "list"))
    assert (row["drivers"], row["heartbeat"]) == ([], [])


TOKEN_REFUSALS: list[tuple[tuple[str, ...], str]] = [
    (("--name", "t", "--driver", "nosuch"), "unknown driver"),
    (("--name", "t", "--driver", "rx1", "--driver", "nosuch"), "unknown driver"),
    (("--name", "t", "--heartbeat", "nocolon"), "invalid heartbeat pair"),
    (("--name", "t", "--heartbeat", ":rx1"), "invalid heartbeat pair"),
    (("--name", "t", "--heartbeat", "site1:"), "invalid heartbeat pair"),
    (("--name", "bad name", "--driver", "rx1"), "invalid token name"),
    (("--name", "taken", "--driver", "rx1"), "already exists"),
]


def test_token_create_refuses_bad_input(tmp_path: Path) -> None:
    cli(tmp_path, "driver", "add", "rx1")
    cli(tmp_path, "token", "create", "--name", "taken")
    results = run_all(tmp_path, [("token", "create", *args) for args, _ in TOKEN_REFUSALS])
    for (args, expected), result in zip(TOKEN_REFUSALS, results, strict=True):
        assert expected in fails(result), args
    assert [t["name"] for t in as_list(cli_json(tmp_path, "token", "list"))] == ["taken"]


def test_token_revoke_refuses_unknown_and_twice(tmp_path: Path) -> None:
    assert "no token named" in fails(cli(tmp_path, "token", "revoke", "nosuch", check=False))
    cli(tmp_path, "token", "create", "--name", "once")
    cli(tmp_path, "token", "revoke", "once")
    assert "already revoked" in fails(cli(tmp_path, "token", "revoke", "once", check=False))
    line = fails(cli(tmp_path, "token", "revoke", "once", "--json", check=False))
    assert "already revoked" in line


# dnis ----------------------------------------------------------------------------------------


def test_dnis_add_and_list(tmp_path: Path) -> None:
    assert cli(tmp_path, "dnis", "list").stdout.strip() == "no dnis"
    assert cli(tmp_path, "dnis", "add", "7000", "--mask", "70####").stdout == (
        "dnis 7000 added with mask 70####\n"
    )
    assert cli_json(tmp_path, "dnis", "add", "12AB", "--mask", "C-") == {
        "dnis": "12AB",
        "mask": "C-",
    }
    assert cli_json(tmp_path, "dnis", "list") == [
        {"dnis": "12AB", "mask": "C-"},
        {"dnis": "7000", "mask": "70####"},
    ]
    human = cli(tmp_path, "dnis", "list").stdout
    assert "MASK" in human
    assert "70####" in human
    assert "12AB" in human


DNIS_REFUSALS = [
    ("123456", "70####", "invalid dnis"),
    ("000", "70####", "invalid dnis"),
    ("12-3", "70####", "invalid dnis"),
    ("1234", "7#0#", "invalid mask"),
    ("1234", "1234567890", "invalid mask"),
    ("1234", "70 ##", "invalid mask"),
    ("1234", "", "invalid mask"),
    ("7000", "99##", "already exists"),
]


def test_dnis_add_refuses_bad_input(tmp_path: Path) -> None:
    cli(tmp_path, "dnis", "add", "7000", "--mask", "70####")
    calls = [("dnis", "add", dnis, "--mask", mask) for dnis, mask, _ in DNIS_REFUSALS]
    for (dnis, mask, expected), result in zip(DNIS_REFUSALS, run_all(tmp_path, calls), strict=True):
        assert expected in fails(result), (dnis, mask)
    assert cli_json(tmp_path, "dnis", "list") == [{"dnis": "7000", "mask": "70####"}]


# accounts ------------------------------------------------------------------------------------


def test_account_add_and_list(tmp_path: Path) -> None:
    assert cli(tmp_path, "account", "list").stdout.strip() == "no accounts"
    assert cli(tmp_path, "account", "add", "700012", "--name", "Acme Ltd").stdout == (
        "account 700012 added\n"
    )
    full = {
        "account_number": "C-A1B2",
        "company_name": "J. Smith",
        "street": "1 Main St",
        "city": "Springfield",
        "state": "IL",
    }
    added = cli_json(
        tmp_path,
        "account",
        "add",
        "C-A1B2",
        "--name",
        "J. Smith",
        "--street",
        "1 Main St",
        "--city",
        "Springfield",
        "--state",
        "IL",
    )
    assert added == full
    listed = as_list(cli_json(tmp_path, "account", "list"))
    assert listed == [
        {"account_number": "700012", "company_name": "Acme Ltd", "street": "", "city": "",
         "state": ""},
        full,
    ]  # fmt: skip
    assert as_list(cli_json(tmp_path, "account", "list", "--limit", "1")) == listed[:1]
    human = cli(tmp_path, "account", "list").stdout
    assert "ACCOUNT" in human
    assert "Springfield" in human


ACCOUNT_REFUSALS: list[tuple[tuple[str, ...], str]] = [
    (("1234567890", "--name", "Too Long"), "at most 9"),
    (("A 1", "--name", "Space"), "without spaces"),
    (("A1", "--name", ""), "name must not be empty"),
    (("A1", "--name", "   "), "name must not be empty"),
    (("A1", "--name", "x", "--state", "S" * 31), "state must be at most 30"),
    (("TAKEN", "--name", "Again"), "already exists"),
]


def test_account_add_refuses_bad_input(tmp_path: Path) -> None:
    cli(tmp_path, "account", "add", "TAKEN", "--name", "First")
    results = run_all(tmp_path, [("account", "add", *args) for args, _ in ACCOUNT_REFUSALS])
    for (args, expected), result in zip(ACCOUNT_REFUSALS, results, strict=True):
        assert expected in fails(result), args
    listed = as_list(cli_json(tmp_path, "account", "list"))
    assert [(a["account_number"], a["company_name"]) for a in listed] == [("TAKEN", "First")]


MIXED_CSV = (
    "account,name,street,city,state\n"
    "A1,Acme,1 Main St,Springfield,IL\n"  # line 2: good
    "TOOLONGACCT,Bad Number,,,\n"  # line 3: account number over 9 characters
    "A2,,,,\n"  # line 4: empty name
    "A3,Three,s,c,st,extra\n"  # line 5: more fields than the header
    "A4,Four\n"  # line 6: good (missing trailing columns are empty)
)


def accounts(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {a["account_number"]: a for a in as_list(cli_json(data_dir, "account", "list"))}


def test_account_import_reports_bad_rows_and_keeps_good_ones(tmp_path: Path) -> None:
    csv_file = tmp_path / "accounts.csv"
    csv_file.write_text(MIXED_CSV)
    result = cli(tmp_path, "account", "import", str(csv_file), check=False)
    assert result.returncode == 1
    refused = result.stderr.strip().splitlines()
    assert [line.split(": ", 1)[0] for line in refused] == [
        f"{csv_file}:3",
        f"{csv_file}:4",
        f"{csv_file}:5",
    ]
    assert "at most 9" in refused[0]
    assert "name must not be empty" in refused[1]
    assert "more fields" in refused[2]
    assert "accounts added 2, updated 0, rows refused 3" in result.stdout

    kept = accounts(tmp_path)
    assert set(kept) == {"A1", "A4"}
    assert kept["A1"] == {
        "account_number": "A1",
        "company_name": "Acme",
        "street": "1 Main St",
        "city": "Springfield",
        "state": "IL",
    }
    assert kept["A4"]["company_name"] == "Four"
    assert kept["A4"]["city"] == ""


def test_account_import_json_lists_refused_rows(tmp_path: Path) -> None:
    csv_file = tmp_path / "accounts.csv"
    csv_file.write_text(MIXED_CSV)
    result = cli(tmp_path, "account", "import", str(csv_file), "--json", check=False)
    assert result.returncode == 1
    report = as_dict(json.loads(result.stdout))
    assert (report["added"], report["updated"]) == (2, 0)
    assert [r["line"] for r in report["refused"]] == [3, 4, 5]


def test_account_import_of_good_rows_then_again_updates(tmp_path: Path) -> None:
    csv_file = tmp_path / "good.csv"
    csv_file.write_text("account,name,city\nB1,Bee One,Here\nB2,Bee Two,There\nB3,Bee Three,\n")
    first = cli(tmp_path, "account", "import", str(csv_file))
    assert first.returncode == 0
    assert first.stderr == ""
    assert "accounts added 3, updated 0, rows refused 0" in first.stdout

    again = cli(tmp_path, "account", "import", str(csv_file), "--json")
    assert again.returncode == 0
    assert as_dict(json.loads(again.stdout)) == {
        "added": 0,
        "updated": 3,
        "refused": [],
    }

    changed = tmp_path / "changed.csv"
    changed.write_text("account_number,company_name\nB1,Renamed\nB4,Bee Four\n")
    result = cli(tmp_path, "account", "import", str(changed))
    assert "accounts added 1, updated 1, rows refused 0" in result.stdout
    kept = accounts(tmp_path)
    assert set(kept) == {"B1", "B2", "B3", "B4"}
    assert kept["B1"]["company_name"] == "Renamed"
    assert kept["B2"]["city"] == "There"


def test_account_import_refuses_a_bad_header(tmp_path: Path) -> None:
    # an unknown column, no name column, no account column, a misspelt column
    headers = ["account,name,phone", "account,street", "name,city", "acct,name"]
    calls = []
    for number, header in enumerate(headers):
        csv_file = tmp_path / f"bad{number}.csv"
        csv_file.write_text(f"{header}\nA1,x,y\n")
        calls.append(("account", "import", str(csv_file)))
    lines = [fails(result) for result in run_all(tmp_path, calls)]
    for header, line in zip(headers, lines, strict=True):
        assert "the header must name the columns" in line, header
    assert "unknown: phone" in lines[0]
    assert cli_json(tmp_path, "account", "list") == []


# signal list, send, heartbeat (against the running station) ---------------------------------


def unique_panel() -> str:
    return "C" + uuid.uuid4().hex[:9].upper()


def send(
    station: Station, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return cli(station.data_dir, "send", *args, check=False, env=env)


def stored(station: Station, panel: str) -> list[dict[str, Any]]:
    rows = as_list(cli_json(station.data_dir, "signal", "list", "--limit", "200"))
    return [r for r in rows if r["panel"] == panel]


def test_signal_list_on_an_empty_database(tmp_path: Path) -> None:
    assert cli(tmp_path, "signal", "list").stdout.strip() == "no signals"
    assert cli_json(tmp_path, "signal", "list") == []


def test_send_and_signal_list(station: Station) -> None:
    panel = unique_panel()
    result = send(
        station,
        "site1:rx1",
        "--url",
        station.url,
        "--token",
        station.token,
        "--dnis",
        "1234",
        "--panel",
        panel,
        "--code",
        "e130",
        "--area",
        "2",
        "--zone",
        "5",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "signal accepted (stored durably)\n"
    [row] = stored(station, panel)
    assert (row["source"], row["destination"], row["token_name"]) == ("site1", "rx1", "main")
    assert (row["dnis"], row["code"], row["area"], row["zone"]) == ("1234", "E130", "02", "005")
    assert isinstance(row["incident_number"], int)
    assert row["received"]

    wide = {"COLUMNS": "200"}  # rich tables are cut to 80 columns when not on a terminal
    human = cli(station.data_dir, "signal", "list", "--limit", "5", env=wide).stdout
    assert "INCIDENT" in human
    assert panel in human


def test_send_json_prints_the_envelope(station: Station) -> None:
    panel = unique_panel()
    common = ("--url", station.url, "--token", station.token, "--dnis", "1234", "--json")
    ok = send(station, "site1:rx1", *common, "--panel", panel, "--code", "R130")
    assert ok.returncode == 0
    assert json.loads(ok.stdout) == SUCCESS
    refused = send(station, "site1:rx2", *common, "--panel", panel, "--code", "E130")
    assert refused.returncode == 1
    assert json.loads(refused.stdout) == {
        "status_code": 422,
        "status": "error",
        "error_code": errors.BUFFER_REFUSED.error_code,
        "message": errors.BUFFER_REFUSED.message,
    }
    assert len(stored(station, panel)) == 1


SEND_REFUSALS: list[tuple[str, tuple[str, ...], errors.ActionRefused]] = [
    ("site1:rx1", ("--code", "E999"), errors.CODE_INVALID),
    ("site1:rx1", ("--zone", "1000"), errors.ZONE_INVALID),
    ("site1:rx1", ("--area", "x"), errors.AREA_INVALID),
    ("site1:rx1", ("--dnis", "000000"), errors.DNIS_INVALID),
    ("site1:rx2", (), errors.BUFFER_REFUSED),
]


def test_send_refused_exits_1_with_the_error_code(station: Station) -> None:
    panel = unique_panel()
    calls = [
        ("send", pair, "--url", station.url, "--token", station.token,
         "--dnis", "1234", "--panel", panel, "--code", "E130", *changes)
        for pair, changes, _ in SEND_REFUSALS
    ]  # fmt: skip
    for (_, _, refusal), result in zip(
        SEND_REFUSALS, run_all(station.data_dir, calls), strict=True
    ):
        assert result.returncode == 1
        assert result.stderr.strip() == f"signal refused: {refusal.error_code} {refusal.message}"
    assert stored(station, panel) == []


def test_send_with_a_bad_token_is_refused(station: Station) -> None:
    args = ("--dnis", "1234", "--panel", unique_panel(), "--code", "E130")
    result = send(station, "site1:rx1", "--url", station.url, "--token", "nope", *args)
    assert result.returncode == 1
    assert errors.AUTH_FAILED.error_code in result.stderr


def test_send_to_an_unreachable_url(station: Station) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    args = ("--dnis", "1234", "--panel", unique_panel(), "--code", "E130")
    result = send(station, "site1:rx1", "--url", url, "--token", station.token, *args)
    line = fails(result)
    assert line.startswith(f"error: cannot reach {url}")


def test_send_takes_token_and_url_from_the_environment(station: Station) -> None:
    panel = unique_panel()
    env = {"ALARMHUB_TOKEN": station.token, "ALARMHUB_URL": station.url}
    result = send(
        station, "site1:rx1", "--dnis", "1234", "--panel", panel, "--code", "E130", env=env
    )
    assert result.returncode == 0, result.stderr
    assert len(stored(station, panel)) == 1


def test_send_idempotency_key(station: Station) -> None:
    panel = unique_panel()
    key = f"cli-{uuid.uuid4()}"
    args = ("--url", station.url, "--token", station.token, "--idempotency-key", key)
    for _ in range(2):
        result = send(
            station, "site1:rx1", *args, "--dnis", "9", "--panel", panel, "--code", "E130"
        )
        assert result.returncode == 0, result.stderr
    assert len(stored(station, panel)) == 1


def test_heartbeat_once(station: Station) -> None:
    result = cli(
        station.data_dir,
        "heartbeat",
        "site1:rx1",
        "--count",
        "1",
        "--url",
        station.url,
        "--token",
        station.token,
    )
    assert result.returncode == 0
    assert re.fullmatch(r"\d\d:\d\d:\d\d heartbeat accepted\n", result.stdout)


def test_heartbeat_token_from_the_environment(station: Station) -> None:
    env = {"ALARMHUB_TOKEN": station.token}
    result = cli(
        station.data_dir, "heartbeat", "site1:rx1", "--count", "1", "--url", station.url, env=env
    )
    assert result.returncode == 0
    assert "heartbeat accepted" in result.stdout


def test_heartbeat_refused_exits_1(station: Station) -> None:
    cases = [
        ("site2:rx1", station.token, errors.HEARTBEAT_REFUSED),
        ("site1:rx1", "not-a-token", errors.AUTH_FAILED),
    ]
    for pair, token, refusal in cases:
        args = ("--count", "1", "--url", station.url, "--token", token)
        line = fails(cli(station.data_dir, "heartbeat", pair, *args, check=False))
        assert line == f"error: heartbeat refused: {refusal.error_code} {refusal.message}"
