"""The fictitious example data set: the files in ``examples/`` are what the generator writes,
every row passes the rules data entry applies, nothing in it could be a real line or address,
and one account's rows do not depend on how many accounts are written."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from alarmhub import example_data
from alarmhub.core.account import Account, account_problem
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.response import (
    Agency,
    AgencyKind,
    Contact,
    PanelUser,
    Phone,
    Zone,
    agency_problem,
    call_list_problem,
    contact_problem,
    phone_kind,
    user_problem,
    zone_problem,
)
from tests.support.processes import ROOT

FICTIONAL_PHONE = re.compile(r"\(\d{3}\) 555-01\d\d")


def rows(directory: Path, name: str) -> list[dict[str, str]]:
    with (directory / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_the_committed_examples_are_the_generators_default_set(tmp_path: Path) -> None:
    example_data.write(tmp_path)
    for name in example_data.FILES:
        assert (tmp_path / name).read_bytes() == (ROOT / "examples" / name).read_bytes(), name


def test_every_row_is_valid_and_fictitious(tmp_path: Path) -> None:
    counts = example_data.write(tmp_path, 120, agency_columns=True)
    accounts = rows(tmp_path, "accounts.csv")
    assert len(accounts) == counts["accounts.csv"] == 120
    assert 7 <= counts["zones.csv"] / 120 <= 9
    agencies = {a["code"]: a["kind"] for a in rows(tmp_path, "agencies.csv")}
    for a in rows(tmp_path, "agencies.csv"):
        agency = Agency(a["code"], AgencyKind(a["kind"]), a["name"], a["phone"])
        assert agency_problem(agency) is None
        assert FICTIONAL_PHONE.fullmatch(a["phone"])
    for a in accounts:
        account = Account(a["account"], a["name"], a["street"], a["city"], a["state"])
        assert account_problem(account) is None
        assert a["name"].startswith("DEMO ")
        assert apply_mask("70####", a["account"][2:]) == a["account"]
        assert [agencies[a[kind]] for kind in ("police", "fire", "medical")] == [
            "police", "fire", "medical",
        ]  # fmt: skip
    for z in rows(tmp_path, "zones.csv"):
        zone = Zone(z["account"], z["zone"], z["description"], z["area"], z["equipment"])
        assert zone_problem(zone) is None
    for u in rows(tmp_path, "users.csv"):
        assert user_problem(PanelUser(u["account"], u["user"], u["name"])) is None
    lists: dict[tuple[str, str], list[int]] = {}
    for c in rows(tmp_path, "contacts.csv"):
        phones = tuple(
            Phone(c[f"phone{n}"], phone_kind(c[f"kind{n}"])) for n in (1, 2, 3) if c[f"phone{n}"]
        )
        contact = Contact(c["account"], c["name"], phones, c["email"], c["relation"], c["notes"])
        assert contact_problem(contact) is None
        assert all(FICTIONAL_PHONE.fullmatch(p.number) for p in phones)
        assert c["email"].endswith("@example.com")
        assert call_list_problem(c["list"]) is None
        lists.setdefault((c["account"], c["list"]), []).append(int(c["order"]))
    assert all(sorted(orders) == list(range(1, len(orders) + 1)) for orders in lists.values())
    assert {name for _, name in lists} == {"PRIMARY", "FIRE", "OPENCLOSE"}
    assert all((a["account"], "PRIMARY") in lists for a in accounts)


def test_an_accounts_rows_do_not_depend_on_the_size_of_the_set() -> None:
    assert example_data.account_rows(42) == example_data.account_rows(42)
    assert example_data.account_rows(42)["accounts.csv"][0][0] == "700042"
    assert example_data.account_number(9999) == "709999"
    assert example_data.account_number(100_000) == "70100000"
