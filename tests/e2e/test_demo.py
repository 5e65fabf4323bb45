"""``alarmhub serve --demo`` on a new database: the demo's accounts are the fictitious example
data set, with zones, panel users, contacts on call lists and agencies, and a demo signal is
described by the zone it names."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from alarmhub import example_data
from tests.support.database import db_rows
from tests.support.processes import Server, wait_for


def test_the_demo_loads_the_example_data_and_its_signals_name_their_zones(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path, extra_args=("--demo",)).start()
    try:
        counts = {
            table: db_rows(tmp_path, f"SELECT count(*) AS n FROM {table}")[0]["n"]  # noqa: S608
            for table in ("account", "account_zone", "account_user", "contact", "agency")
        }
        expected = example_data.account_rows(42)
        zones = db_rows(
            tmp_path,
            "SELECT zone, area, description FROM account_zone WHERE account_number = ? "
            "ORDER BY zone, area",
            "700042",
        )
        contacts = db_rows(
            tmp_path,
            "SELECT c.name, e.position FROM contact c JOIN call_list_entry e "
            "ON e.contact_id = c.contact_id WHERE e.account_number = ? AND e.list_name = ? "
            "ORDER BY e.position",
            "700042",
            "PRIMARY",
        )
        account = db_rows(
            tmp_path,
            "SELECT police, fire, medical, permit FROM account WHERE account_number = ?",
            "700042",
        )[0]
        hashes = db_rows(
            tmp_path,
            "SELECT c.name, c.passcode_hash, a.duress_hash FROM contact c JOIN account a "
            "ON a.account_number = c.account_number WHERE c.passcode_hash IS NOT NULL",
        )
        text = (tmp_path / "DEMO-CREDENTIALS.txt").read_text()
        token = re.search(r"bearer token\s+(\S+)", text)
        assert token, text
        signal = {"dnis": "1234", "panel": "0042", "code": "E110", "zone_or_user": "15"}
        answer = httpx.post(
            f"{server.url}/rx/demo-site:demo/contact_id",
            json=signal,
            headers={"Authorization": f"Bearer {token.group(1)}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        alarm = wait_for(
            lambda: db_rows(
                tmp_path, "SELECT hist_text FROM alarm WHERE account_number = ?", "700042"
            ),
            "the demo signal's alarm",
        )
    finally:
        server.stop()
    assert counts["account"] == example_data.DEFAULT_ACCOUNTS
    assert counts["agency"] == len(list(example_data.agencies()))
    assert counts["account_zone"] > 7 * counts["account"]
    assert counts["account_user"] >= 2 * counts["account"]
    assert counts["contact"] == 3 * counts["account"]
    assert [(z["zone"], z["description"]) for z in zones] == [
        (row[1], row[3]) for row in expected["zones.csv"]
    ]
    primary = [row[1] for row in expected["contacts.csv"] if row[-2] == "PRIMARY"]
    assert [(c["name"], c["position"]) for c in contacts] == list(
        zip(primary, [1, 2, 3], strict=True)
    )
    police, fire, medical, permit = expected["accounts.csv"][0][5:9]
    assert (account["police"], account["fire"], account["medical"]) == (police, fire, medical)
    assert account["permit"] == (permit or None)
    assert alarm[0]["hist_text"] == "FIRE ZONE 015 KITCHEN SMOKE"
    # one contact of the "try it" account has a passcode, the account a duress code: both
    # printed for trying the check, both kept only as Argon2 hashes
    codes = re.search(r"700042: (.+)'s passcode (\d{4}); its duress code (\d{4})", text)
    assert codes, text
    (row,) = hashes
    assert row["name"] == codes.group(1) == primary[0]
    for hashed, code in (
        (row["passcode_hash"], codes.group(2)),
        (row["duress_hash"], codes.group(3)),
    ):
        assert hashed.startswith("$argon2") and code not in hashed
