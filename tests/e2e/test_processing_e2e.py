"""Alarm processing through a real server: signals posted to the signaling interface become
pending alarms and history events (decisions §2, §3, §4), read with ``alarmhub.store.queries``
from the server's own database. The line and accounts are provisioned with the CLI.

Routing and supervision run in the server's writer process, so every check polls with a
generous deadline; no test asserts how long anything took.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.store import queries
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine, write_transaction
from tests.store.test_processing import block_alarm_id, unblock_alarm_id
from tests.support.database import database_url
from tests.support.processes import Server, Station, cli, provision, wait_for

DNIS = "C1"
MASK = "70####"
ACCOUNTS = {f"70{n:04d}": f"Subscriber {n}" for n in range(1, 12)}  # panels 1..11
SUCCESS = {"status_code": 200, "status": "success"}
DEADLINE_S = 10.0
HOUR = 3600 * 1_000_000
Row = dict[str, Any]


@dataclass
class Hub:
    """A provisioned station with a running server and an engine on its database for reads."""

    station: Station
    engine: Engine

    def post(self, panel: str, code: str, zone: str = "", area: str = "") -> None:
        body = {"dnis": DNIS, "panel": panel, "code": code, "zone_or_user": zone, "area": area}
        answer = self.station.post(body)
        assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text

    def beat(self) -> None:
        answer = httpx.get(
            f"{self.station.url}/rx/site1:rx1/hb",
            headers={"Authorization": f"Bearer {self.station.token}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text

    def pending(self) -> list[Row]:
        with self.engine.connect() as conn:
            return queries.pending_alarms(conn)

    def history(self, account: str) -> list[Row]:
        with self.engine.connect() as conn:
            return queries.account_history(conn, account, now_us() - HOUR, now_us() + HOUR)

    def alarm(self, alarm_id: int) -> Row | None:
        with self.engine.connect() as conn:
            return queries.alarm(conn, alarm_id)

    def unrouted(self) -> int:
        with self.engine.connect() as conn:
            return queries.unrouted_count(conn)

    def history_when(self, account: str, count: int) -> list[Row]:
        """The account's history once it holds at least ``count`` events (newest first)."""
        return wait_for(
            lambda: events if len(events := self.history(account)) >= count else None,
            f"{count} history events of account {account!r}",
            DEADLINE_S,
        )


def start_hub(data_dir: Path, env: dict[str, str] | None = None) -> tuple[Hub, Server]:
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    first, *rest = ACCOUNTS.items()
    cli(data_dir, "account", "add", first[0], "--name", first[1])
    csv_file = data_dir / "accounts.csv"
    csv_file.write_text("account,name\n" + "".join(f"{n},{name}\n" for n, name in rest))
    cli(data_dir, "account", "import", str(csv_file))
    server = Server(data_dir, env=env or {}).start()
    engine = open_engine(database_url(data_dir))
    return Hub(Station(server, token, data_dir), engine), server


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """One station with default settings, shared by the tests that use distinct accounts."""
    hub, server = start_hub(tmp_path_factory.mktemp("hub"))
    try:
        yield hub
    finally:
        hub.engine.dispose()
        server.stop()


@pytest.fixture
def own_hub(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Hub]:
    """A station of its own, its server started with the environment the test passes as the
    fixture's parameter."""
    hub, server = start_hub(tmp_path / "hub", getattr(request, "param", None))
    try:
        yield hub
    finally:
        hub.engine.dispose()
        server.stop()
        assert server.process is not None
        assert server.process.returncode == 0, server.log()


def by_account(alarms: list[Row], account: str) -> list[Row]:
    return [a for a in alarms if a["account_number"] == account]


# signals become alarms and history -----------------------------------------------------------


def test_fire_burglary_opening_restore_and_unknown_account(hub: Hub) -> None:
    account = "700001"
    hub.post("1", "E110", zone="1")
    hub.post("1", "E130", zone="2", area="1")
    hub.post("1", "E401", zone="3")
    hub.post("1", "R130", zone="2", area="1")
    hub.post("9999", "E130", zone="5")  # masks to 709999: not in account data
    hub.post("12345", "E120")  # does not fit the mask: no account number at all

    events = hub.history_when(account, 4)
    assert [e["code"] for e in events] == ["R130", "E401", "E130", "E110"], "newest first"
    restore, opening, burglary, fire = events
    assert (fire["pr_checksum"], fire["type"], fire["priority"], fire["color"]) == (
        "PENDING",
        "FIRE",
        "A",
        "4F",
    )
    assert (fire["hist_text"], fire["second_zone_is"], fire["zone"], fire["area"]) == (
        "FIRE ZONE 001",
        "Z",
        "001",
        "00",
    )
    assert fire["alarm_id"] == fire["incident_number"]
    assert (burglary["pr_checksum"], burglary["type"], burglary["hist_text"]) == (
        "PENDING",
        "BURG",
        "BURGLARY ZONE 002",
    )
    assert burglary["area"] == "01"
    assert (opening["pr_checksum"], opening["type"], opening["alarm_category"]) == (
        "HISTORY",
        "OPEN",
        "S",
    )
    assert (opening["hist_text"], opening["second_zone_is"], opening["alarm_id"]) == (
        "O/C BY USER 003",
        "U",
        None,
    )
    assert (restore["pr_checksum"], restore["alarm_id"]) == ("RESTORE", burglary["incident_number"])
    assert restore["hist_text"] == "BURGLARY RESTORE ZONE 002"
    for event in events:
        assert (event["source"], event["destination"], event["dnis"], event["panel"]) == (
            "site1",
            "rx1",
            DNIS,
            "1",
        )

    queue = by_account(hub.pending(), account)
    assert [a["alarm_id"] for a in queue] == [fire["incident_number"], burglary["incident_number"]]
    assert all(a["company_name"] == "Subscriber 1" for a in queue)
    restored = hub.alarm(int(burglary["incident_number"]))
    assert restored is not None
    assert restored["restore_us"] is not None
    assert hub.alarm(int(fire["incident_number"])) is not None
    assert hub.alarm(int(opening["incident_number"])) is None, "an opening raises no alarm"

    unknown = wait_for(
        lambda: by_account(hub.pending(), "709999"), "the UNKNOWN ACCOUNT alarm", DEADLINE_S
    )
    [alarm] = unknown
    assert (alarm["type"], alarm["hist_text"], alarm["path"]) == (
        "UNKN",
        "UNKNOWN ACCOUNT BURGLARY ZONE 005",
        "UNKNOWN",
    )
    assert (alarm["dnis"], alarm["panel"], alarm["code"], alarm["area"], alarm["zone"]) == (
        DNIS,
        "9999",
        "E130",
        "00",
        "005",
    )
    assert (alarm["source"], alarm["destination"], alarm["company_name"]) == (
        "site1",
        "rx1",
        None,
    )
    unmasked = wait_for(
        lambda: [a for a in by_account(hub.pending(), "") if a["panel"] == "12345"],
        "the UNKNOWN ACCOUNT alarm of a panel that does not fit",
        DEADLINE_S,
    )
    assert [(a["type"], a["priority"], a["code"]) for a in unmasked] == [("UNKN", "B", "E120")]


def test_pending_queue_priority_order(hub: Hub) -> None:
    sent = [
        ("2", "E300", "TRBL"),  # trouble, G
        ("3", "E130", "BURG"),  # burglary, C
        ("4", "E100", "MED"),  # medical, D
        ("5", "E110", "FIRE"),  # fire, A
        ("6", "E120", "PANIC"),  # panic, B
        ("7", "E131", "BURG"),  # a second burglary, later
    ]
    for panel, code, _ in sent:
        hub.post(panel, code, zone="1")
    ours = {f"70{int(panel):04d}" for panel, _, _ in sent}

    def queue() -> list[Row] | None:
        found = [a for a in hub.pending() if a["account_number"] in ours]
        return found if len(found) == len(sent) else None

    alarms = wait_for(queue, "six pending alarms", DEADLINE_S)
    assert [(a["account_number"], a["type"]) for a in alarms] == [
        ("700005", "FIRE"),
        ("700006", "PANIC"),
        ("700003", "BURG"),
        ("700007", "BURG"),
        ("700004", "MED"),
        ("700002", "TRBL"),
    ]
    assert [a["priority"] for a in alarms] == sorted(a["priority"] for a in alarms)


# the system's own alarms ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "own_hub", [{"ALARMHUB_RUNAWAY_LIMIT": "3", "ALARMHUB_RUNAWAY_MINUTES": "1"}], indirect=True
)
def test_runaway_account_raises_one_alarm(own_hub: Hub) -> None:
    account = "700008"
    for zone in range(1, 7):
        own_hub.post("8", "E130", zone=str(zone))
    events = own_hub.history_when(account, 7)  # six signals and the RUNAWAY alarm
    signals = sorted((e for e in events if e["code"]), key=lambda e: e["incident_number"])
    assert [e["pr_checksum"] for e in signals] == ["PENDING"] * 3 + ["RUNAWAY"] * 3
    queue = by_account(own_hub.pending(), account)
    runaways = [a for a in queue if a["type"] == "RUNAW"]
    assert len(runaways) == 1
    assert runaways[0]["hist_text"] == "RUNAWAY 3 SIGS IN 1 MIN"
    assert sorted(a["type"] for a in queue) == ["BURG", "BURG", "BURG", "RUNAW"]
    system = [e for e in events if e["pr_checksum"] == "SYSTEM"]
    assert [(e["alarm_id"], e["type"]) for e in system] == [(runaways[0]["alarm_id"], "RUNAW")]
    # the other accounts of the line are not affected
    own_hub.post("9", "E130", zone="1")
    [other] = own_hub.history_when("700009", 1)
    assert other["pr_checksum"] == "PENDING"


@pytest.mark.parametrize(
    "own_hub",
    [{"ALARMHUB_HEARTBEAT_TIMEOUT": "1", "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "0.2"}],
    indirect=True,
)
def test_source_failure_alarm_and_restoral(own_hub: Hub) -> None:
    own_hub.beat()

    def failure() -> Row | None:
        return next((a for a in own_hub.pending() if a["type"] == "SRCFL"), None)

    alarm = wait_for(failure, "a pending SOURCE FAILURE alarm", 15.0)
    assert alarm["hist_text"] == "SOURCE FAILURE site1:rx1"
    assert "site1:rx1" in str(alarm["hist_text"]).lower()
    assert alarm["restore_us"] is None
    alarm_id = int(alarm["alarm_id"])

    def restoral() -> Row | None:
        own_hub.beat()
        return next(
            (
                e
                for e in own_hub.history("")
                if e["alarm_id"] == alarm_id and str(e["hist_text"]).endswith("RESTORE")
            ),
            None,
        )

    event = wait_for(restoral, "the SOURCE FAILURE restoral in history", 15.0, every=0.2)
    assert event["hist_text"] == "SOURCE FAILURE site1:rx1 RESTORE"
    assert event["pr_checksum"] == "SYSTEM"
    assert event["incident_number"] != alarm_id
    restored = wait_for(
        lambda: a if (a := own_hub.alarm(alarm_id)) and a["restore_us"] else None,
        "the SOURCE FAILURE alarm marked restored",
        DEADLINE_S,
    )
    assert restored["type"] == "SRCFL"
    raised = [
        e
        for e in own_hub.history("")
        if e["type"] == "SRCFL"
        and e["incident_number"] == e["alarm_id"]
        and e["incident_number"] < event["incident_number"]
    ]
    assert [e["alarm_id"] for e in raised] == [alarm_id], "one alarm while the source was down"


@pytest.mark.parametrize("own_hub", [{"ALARMHUB_TEST_GRACE_MINUTES": "0"}], indirect=True)
def test_fail_to_test_alarm_and_test_report(own_hub: Hub) -> None:
    account = "700010"
    with write_transaction(own_hub.engine) as conn:
        conn.execute(
            update(s.account)
            .where(s.account.c.account_number == account)
            .values(test_interval_s=1, last_test_us=now_us() - HOUR)
        )

    def fail_to_test() -> Row | None:
        return next((a for a in by_account(own_hub.pending(), account) if a["type"] == "FTT"), None)

    alarm = wait_for(fail_to_test, "a pending FAIL TO TEST alarm", 15.0)
    assert (alarm["hist_text"], alarm["path"], alarm["company_name"]) == (
        "FAIL TO TEST",
        "SYSTEM",
        "Subscriber 10",
    )
    alarm_id = int(alarm["alarm_id"])
    time.sleep(1.5)  # more supervision rounds: still one alarm while no test report came
    assert [a["alarm_id"] for a in by_account(own_hub.pending(), account)] == [alarm_id]

    own_hub.post("10", "E602")

    def restoral() -> Row | None:
        return next(
            (
                e
                for e in own_hub.history(account)
                if e["alarm_id"] == alarm_id and e["incident_number"] != alarm_id
            ),
            None,
        )

    event = wait_for(restoral, "the FAIL TO TEST restoral", DEADLINE_S)
    assert (event["hist_text"], event["pr_checksum"], event["type"]) == (
        "FAIL TO TEST RESTORE",
        "SYSTEM",
        "FTT",
    )
    restored = own_hub.alarm(alarm_id)
    assert restored is not None
    assert restored["restore_us"] is not None
    reports = [e for e in own_hub.history(account) if e["code"] == "E602"]
    assert [(e["pr_checksum"], e["type"]) for e in reports] == [("HISTORY", "TEST")]


# routing that fails is retried ---------------------------------------------------------------


def test_routing_recovers_by_itself_after_a_failed_attempt(own_hub: Hub) -> None:
    """Routing fails (a stored alarm row holds the alarm id of the next signal, a real
    constraint error of the database) while six burglaries of one account arrive. Once the
    obstacle is gone, the writer must route them by itself, without another signal arriving,
    and route them as if the failed attempts never happened: six pending alarms, no RUNAWAY
    (each failed attempt must not count the signals towards the runaway limit of 10)."""
    account = "700011"
    with own_hub.engine.connect() as conn:
        last = conn.execute(
            select(s.sequence.c.value).where(s.sequence.c.name == "incident")
        ).scalar_one()
    first = int(last) + 1
    block_alarm_id(own_hub.engine, first, now_us())
    for zone in range(1, 7):
        own_hub.post("11", "E130", zone=str(zone))
    server = own_hub.station.server
    wait_for(lambda: "routing failed" in server.log(), "a failed routing attempt", DEADLINE_S)
    time.sleep(1.5)  # more failed attempts: the writer retries
    assert own_hub.unrouted() == 6
    assert own_hub.history(account) == []

    unblock_alarm_id(own_hub.engine, first)
    events = own_hub.history_when(account, 6)
    assert [e["pr_checksum"] for e in events] == ["PENDING"] * 6
    assert [e["incident_number"] for e in events][::-1] == list(range(first, first + 6))
    queue = by_account(own_hub.pending(), account)
    assert [a["type"] for a in queue] == ["BURG"] * 6
    assert own_hub.unrouted() == 0
