"""The monitoring query interface over HTTP, against a node in this process; a restart, on a
real ``alarmhub serve`` process.

Spec §2.3-2.6, §4.3-4.6, §5.2, §7.2, §8 and decisions §1 and §3: the fields and formats of
XMHIST, XMAPEND and XMAINPRO, the five X-SVC headers with both digest schemes, the date window,
replayed nonces (also across a restart), the error bodies and the XMHIST window rules.

One station serves the whole module (another, on a real process, the restart). Its time zone
is fixed (``Asia/Kolkata``, UTC+05:30 all year, so a zone mistake shows in every date and NTD
value). Signals are posted once, through the signaling interface, and routed by the node before
any query; an account with a test interval (and no grace) gets a FAIL TO TEST alarm, the
service system's own event. The history events of one account are moved back to fixed moments
of March 2024 in the database, so the window rules and the contract's NTD check values can be
tested exactly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.ntd import to_ntd
from alarmhub.store import queries
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.xm import digest, errors
from tests.support import xm_signing as signing
from tests.support.database import database_url
from tests.support.in_process import AnyStation, InProcessStation, in_process_node
from tests.support.processes import Server, Station, cli, provision, wait_for
from tests.support.xm_signing import (
    APPKEY,
    HEADER_NAMES,
    PARAMS,
    PATH,
    new_nonce,
    published_sha1,
    svc_headers,
)

ZONE_NAME = "Asia/Kolkata"
ZONE = ZoneInfo(ZONE_NAME)
USER, PASSWORD = "documentation", "secretpassword"
HMAC_USER, HMAC_PASSWORD = "hmacclient", "hmac-only-secret"
DNIS, MASK = "C1", "70####"
MAIN = "700042"  # panel 42: burglary, fire, burglary restore, opening
SERVICE = "700050"  # panel 50: a burglary, an opening and a FAIL TO TEST alarm
WINDOW = "700060"  # panel 60: four openings, three of them moved back to March 2024
SETTLED = "700051"  # panel 51: a burglary and a FAIL TO TEST alarm, both resolved
UNKNOWN = "709999"  # panel 9999 fits the mask but the account does not exist
NAMES = {
    MAIN: "Subscriber 42",
    SERVICE: "Subscriber 50",
    SETTLED: "Subscriber 51",
    WINDOW: "Subscriber 60",
}
TESTED = (SERVICE, SETTLED)  # the accounts with a test interval
BACKDATED = {  # WINDOW's openings by user number, moved to these local times
    "001": datetime(2024, 3, 25, 16, 45, 6),
    "002": datetime(2024, 3, 25, 23, 59, 59),
    "003": datetime(2024, 3, 26, 0, 0, 2),
}
DEADLINE_S = 15.0
SUCCESS = {"status_code": 200, "status": "success"}
HISTORY_FIELDS = frozenset(
    {
        "ACCOUNT_NUMBER",
        "HISTORY_EVENT_NTD",
        "HISTORY_EVENT_DATE",
        "INCIDENT_NUMBER",
        "SEIA_CODE",
        "ZONE_CODE_1",
        "ZONE_CODE_2",
        "TYPE",
        "OPR",
        "ALARM_CATEGORY",
        "PRIORITY",
        "HIST_TEXT",
        "ZONE_1",
        "ZONE_2",
        "AM_NOTIFY",
        "PENDING_TIME",
        "PR_CHECKSUM",
        "SECOND_ZONE_IS",
        "COLOR",
        "VIDEO",
    }
)
PENDING_FIELDS = frozenset(
    {
        "PRIORITY",
        "PASSCODE_VERIFIED",
        "PENDING_TIME",
        "PEND_TIME",
        "PEND_DATE",
        "HISTORY_TIME",
        "ACCOUNT_NUMBER",
        "INCIDENT_NUMBER",
        "HIST_TEXT",
        "COMPANY_NAME",
        "HISTORY_EVENT_NTD",
        "TYPE",
    }
)
NTD_TEXT = re.compile(r"\d{6}\.\d{5}")
HISTORY_DATE_TEXT = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d")
PEND_DATE_TEXT = re.compile(r"\d\d/\d\d/\d{4}")
CLOCK_TEXT = re.compile(r"\d\d:\d\d:\d\d")
Row = dict[str, Any]
Form = dict[str, str]


# signing -------------------------------------------------------------------------------------


def sha1_headers(
    *,
    username: str = USER,
    password: str = PASSWORD,
    date: str | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    return signing.sha1_headers(username, password, date=date, nonce=nonce)


def hmac_headers(
    form: Mapping[str, str],
    *,
    username: str = HMAC_USER,
    password: str = HMAC_PASSWORD,
    nonce: str | None = None,
) -> dict[str, str]:
    return signing.hmac_headers(form, username, password, nonce=nonce)


def local(unix_us: int) -> datetime:
    return datetime.fromtimestamp(unix_us / 1_000_000, UTC).astimezone(ZONE)


def unix_us(moment: datetime) -> int:
    """A naive local time of the station's zone as UNIX microseconds."""
    return int(moment.replace(tzinfo=ZONE).timestamp()) * 1_000_000


def as_list(event: object) -> list[dict[str, str]]:
    """EVENT as a list whatever its shape (an object is one event)."""
    if isinstance(event, dict):
        return [event]
    assert isinstance(event, list)
    return event


# the station ---------------------------------------------------------------------------------


@dataclass
class Xm:
    """The module's station: its node, an engine on its database for reads, and the moments
    around the post of MAIN's burglary."""

    station: AnyStation
    engine: Engine
    burglary_sent: tuple[int, int] = (0, 0)

    @property
    def server(self) -> Server:
        """The process of a station on a real one."""
        assert isinstance(self.station, Station)
        return self.station.server

    def post(self, panel: str, code: str, zone: str = "", area: str = "") -> None:
        body = {"dnis": DNIS, "panel": panel, "code": code, "zone_or_user": zone, "area": area}
        answer = self.station.post(body)
        assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text

    def history(self, account: str) -> list[Row]:
        """Every history event of ``account``, newest first."""
        with self.engine.connect() as conn:
            return queries.account_history(conn, account, 0, now_us() + 3_600_000_000)

    def pending(self) -> list[Row]:
        """The pending alarms, in no particular order (the test sorts them itself)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.alarm).where(s.alarm.c.state == "pending")).mappings()
            return [dict(r) for r in rows]

    def unrouted(self) -> int:
        with self.engine.connect() as conn:
            return queries.unrouted_count(conn)

    def send(
        self,
        form: Mapping[str, str],
        headers: Mapping[str, str],
        params: Mapping[str, str] = PARAMS,
        urlencoded: bool = False,
    ) -> httpx.Response:
        """POST the form (multipart, as the spec says, or URL-encoded) with these headers."""
        client = self.station.client
        if urlencoded:
            return client.post(
                PATH, params=params, data=dict(form), headers=dict(headers), timeout=30
            )
        parts = {name: (None, value) for name, value in form.items()}
        return client.post(PATH, params=params, files=parts, headers=dict(headers), timeout=30)

    def call(self, method: str | None, **fields: str) -> httpx.Response:
        """A request signed by the published sha1 recipe."""
        form = fields if method is None else {"*setMethod": method, **fields}
        return self.send(form, sha1_headers())

    def ask(self, method: str, **fields: str) -> dict[str, Any]:
        """A successful answer of ``method``."""
        response = self.call(method, **fields)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        body = response.json()
        assert isinstance(body, dict)
        return body

    def refused(self, send: Callable[[], httpx.Response], reason: str) -> None:
        """``send`` is answered 401 with exactly the authentication-failed body, which does not
        tell why; the reason appears in the node's log."""
        before = self.station.log().count(reason)
        response = send()
        assert response.status_code == 401, response.text
        assert response.json() == errors.AUTHENTICATION_FAILED
        assert reason not in response.text
        wait_for(
            lambda: self.station.log().count(reason) > before,
            f"{reason!r} in the node's log",
            DEADLINE_S,
        )


def backdate(engine: Engine, account: str) -> None:
    """Move the history events of ``account`` (by user number) to the moments of BACKDATED."""
    h = s.history.c
    with write_transaction(engine) as conn:
        for zone, moment in BACKDATED.items():
            moved = conn.execute(
                update(s.history)
                .where(h.account_number == account, h.zone == zone)
                .values(received_us=unix_us(moment))
            ).rowcount
            assert moved == 1


def resolve(engine: Engine, account: str) -> None:
    """Take the alarms of ``account`` out of the open states, as an operator's resolution will
    (operators come later): their events are settled."""
    a = s.alarm.c
    with write_transaction(engine) as conn:
        moved = conn.execute(
            update(s.alarm).where(a.account_number == account).values(state="resolved")
        ).rowcount
        assert moved == 2


@pytest.fixture(scope="module")
def xm(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Xm]:
    data_dir: Path = tmp_path_factory.mktemp("xm")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    accounts = data_dir / "accounts.csv"
    rows = "".join(f"{n},{name}\n" for n, name in NAMES.items() if n not in TESTED)
    accounts.write_text("account,name\n" + rows)
    cli(data_dir, "account", "import", str(accounts))
    for account in TESTED:  # a test report every 1 s (0.0003 h), no grace: FAIL TO TEST soon
        name = NAMES[account]
        cli(data_dir, "account", "add", account, "--name", name, "--test-interval", "0.0003")
    cli(data_dir, "apiuser", "add", USER, "--password", PASSWORD)
    cli(data_dir, "apiuser", "add", HMAC_USER, "--password", HMAC_PASSWORD, "--hmac-only")
    env = {"ALARMHUB_TIMEZONE": ZONE_NAME, "ALARMHUB_TEST_GRACE_MINUTES": "0"}
    with in_process_node(data_dir, env) as node:
        engine = open_engine(database_url(data_dir))
        try:
            yield _provisioned(Xm(InProcessStation(node, token, data_dir), engine))
        finally:
            engine.dispose()


def _provisioned(hub: Xm) -> Xm:
    """The module's signals posted and routed, its alarms resolved and its events backdated."""
    engine = hub.engine
    before = now_us()
    hub.post("42", "E130", zone="15", area="1")
    hub.burglary_sent = (before, now_us())
    hub.post("42", "E110", zone="1")
    hub.post("42", "R130", zone="15", area="1")
    hub.post("42", "E401", zone="3")
    hub.post("9999", "E130", zone="5")
    hub.post("50", "E130", zone="1")
    hub.post("50", "E401", zone="2")
    hub.post("51", "E130", zone="1")
    for user in ("1", "2", "3", "4"):
        hub.post("60", "E401", zone=user)
    wait_for(lambda: hub.unrouted() == 0, "every signal routed", DEADLINE_S)
    wait_for(
        lambda: (
            sorted(a["account_number"] for a in hub.pending() if a["type"] == "FTT") == list(TESTED)
        ),
        "the FAIL TO TEST alarms of the accounts with a test interval",
        DEADLINE_S,
    )
    resolve(engine, SETTLED)
    backdate(engine, WINDOW)
    return hub


@pytest.fixture(scope="module")
def served_xm(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Xm]:
    """A station on a real ``alarmhub serve`` process with the sha1 API user, no signals."""
    data_dir: Path = tmp_path_factory.mktemp("xm-served")
    token = provision(data_dir)
    cli(data_dir, "apiuser", "add", USER, "--password", PASSWORD)
    station = Station(Server(data_dir).start(), token, data_dir)
    engine = open_engine(database_url(data_dir))
    try:
        yield Xm(station, engine)
    finally:
        engine.dispose()
        station.close()
        station.server.stop()


# XMHIST: fields and formats ------------------------------------------------------------------


def test_xmhist_fields_and_formats(xm: Xm) -> None:
    body = xm.ask("XMHIST", ACCOUNT=MAIN, STARTDATE="", STOPDATE="", HOURS="24")
    events = body["EVENT"]
    assert isinstance(events, list)
    rows = xm.history(MAIN)
    assert [e["SEIA_CODE"] for e in events] == ["E401", "R130", "E110", "E130"], "newest first"
    assert [e["INCIDENT_NUMBER"] for e in events] == [str(r["incident_number"]) for r in rows]
    assert body["TOTAL_RECORDS"] == "4"
    signal = s.signal.c
    with xm.engine.connect() as conn:
        received = dict(conn.execute(select(signal.incident_number, signal.received_us)).all())
    for event in events:
        assert set(event) == HISTORY_FIELDS
        assert all(isinstance(value, str) for value in event.values()), event
        assert event["ACCOUNT_NUMBER"] == "   700042"
        at_us = received[int(event["INCIDENT_NUMBER"])]  # the signal's receive time
        assert event["HISTORY_EVENT_DATE"] == local(at_us).strftime("%m/%d/%y %H:%M:%S")
        assert HISTORY_DATE_TEXT.fullmatch(event["HISTORY_EVENT_DATE"])
        assert event["HISTORY_EVENT_NTD"] == to_ntd(at_us, ZONE)
        assert NTD_TEXT.fullmatch(event["HISTORY_EVENT_NTD"])
        assert NTD_TEXT.fullmatch(event["PENDING_TIME"])
        assert (event["OPR"], event["AM_NOTIFY"], event["VIDEO"]) == ("", "N", "N")
    opening, restore, fire, burglary = events
    common = ("SEIA_CODE", "ZONE_CODE_1", "ZONE_CODE_2", "ZONE_1", "ZONE_2", "SECOND_ZONE_IS")
    shown = ("TYPE", "PRIORITY", "COLOR", "ALARM_CATEGORY", "HIST_TEXT", "PR_CHECKSUM")
    assert [burglary[k] for k in common] == ["E130", "130", "015", "01", "015", "Z"]
    assert [burglary[k] for k in shown] == ["BURG", "C", "CF", "O", "BURGLARY ZONE 015", "PENDING"]
    assert [fire[k] for k in common] == ["E110", "110", "001", "00", "001", "Z"]
    assert [fire[k] for k in shown] == ["FIRE", "A", "4F", "O", "FIRE ZONE 001", "PENDING"]
    assert [restore[k] for k in common] == ["R130", "130", "015", "01", "015", "Z"]
    assert (restore["HIST_TEXT"], restore["PR_CHECKSUM"]) == (
        "BURGLARY RESTORE ZONE 015",
        "RESTORE",
    )
    assert [opening[k] for k in common] == ["E401", "401", "003", "00", "003", "U"]
    assert [opening[k] for k in shown] == ["OPEN", "z", "07", "S", "O/C BY USER 003", "HISTORY"]
    # the date shown is the moment the caller sent the burglary, to the second, in the zone
    shown_at = datetime.strptime(burglary["HISTORY_EVENT_DATE"], "%m/%d/%y %H:%M:%S")
    seconds = shown_at.replace(tzinfo=ZONE).timestamp()
    sent_from, sent_to = xm.burglary_sent
    assert sent_from // 1_000_000 <= seconds <= sent_to / 1_000_000


def test_xmhist_ntd_check_values_of_the_contract(xm: Xm) -> None:
    body = xm.ask("XMHIST", ACCOUNT=WINDOW, STARTDATE="20240325", STOPDATE="20240326")
    shown = [(e["ZONE_2"], e["HISTORY_EVENT_DATE"], e["HISTORY_EVENT_NTD"]) for e in body["EVENT"]]
    assert shown == [
        ("003", "03/26/24 00:00:02", "738973.00002"),
        ("002", "03/25/24 23:59:59", "738972.99999"),
        ("001", "03/25/24 16:45:06", "738972.69799"),
    ]


def test_xmhist_one_event_is_an_object_unless_array_y(xm: Xm) -> None:
    body = xm.ask("XMHIST", ACCOUNT=UNKNOWN, HOURS="24")
    event = body["EVENT"]
    assert isinstance(event, dict)
    assert body["TOTAL_RECORDS"] == "1"
    assert set(event) == HISTORY_FIELDS
    assert event["ACCOUNT_NUMBER"] == "   709999"
    assert (event["SEIA_CODE"], event["ZONE_2"], event["TYPE"], event["PR_CHECKSUM"]) == (
        "E130",
        "005",
        "UNKN",
        "UNKNOWN",
    )
    assert xm.ask("XMHIST", ACCOUNT=UNKNOWN, HOURS="24", ARRAY="N")["EVENT"] == event
    assert xm.ask("XMHIST", ACCOUNT=UNKNOWN, HOURS="24", ARRAY="Y") == {
        "EVENT": [event],
        "TOTAL_RECORDS": "1",
    }


@pytest.mark.parametrize("array", ["", "Y"])
def test_xmhist_no_match_is_an_empty_array(xm: Xm, array: str) -> None:
    empty = {"EVENT": [], "TOTAL_RECORDS": "0"}
    assert xm.ask("XMHIST", ACCOUNT="123456789", HOURS="24", ARRAY=array) == empty
    assert xm.ask("XMHIST", ACCOUNT=WINDOW, STARTDATE="20240324", STOPDATE="20240324") == empty


# XMHIST: the window --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "users"),
    [
        # an absent STOPTIME means through the end of STOPDATE
        ({"STARTDATE": "20240325", "STOPDATE": "20240325"}, ["002", "001"]),
        ({"STARTDATE": "20240326", "STOPDATE": "20240326"}, ["003"]),
        ({"STARTDATE": "20240325", "STOPDATE": "20240326"}, ["003", "002", "001"]),
        ({"STARTDATE": "20240324", "STOPDATE": "20240324"}, []),
        ({"STARTDATE": "20240327", "STOPDATE": "20240330"}, []),
        # STARTTIME and STOPTIME cut inside the days
        (
            {
                "STARTDATE": "20240325",
                "STARTTIME": "1645",
                "STOPDATE": "20240326",
                "STOPTIME": "0001",
            },
            ["003", "002", "001"],
        ),
        (
            {
                "STARTDATE": "20240325",
                "STARTTIME": "1646",
                "STOPDATE": "20240326",
                "STOPTIME": "0000",
            },
            ["002"],
        ),
        ({"STARTDATE": "20240325", "STARTTIME": "1646", "STOPDATE": "20240325"}, ["002"]),
        ({"STARTDATE": "20240325", "STOPDATE": "20240325", "STOPTIME": "1646"}, ["001"]),
        ({"STARTDATE": "20240325", "STOPDATE": "20240325", "STOPTIME": "1645"}, []),
        ({"STARTDATE": "20240326", "STARTTIME": "0001", "STOPDATE": "20240326"}, []),
        # dates that are sent win over HOURS
        ({"STARTDATE": "20240325", "STOPDATE": "20240325", "HOURS": "24"}, ["002", "001"]),
    ],
)
def test_xmhist_date_window(xm: Xm, window: Form, users: list[str]) -> None:
    body = xm.ask("XMHIST", ACCOUNT=WINDOW, **window)
    assert [e["ZONE_2"] for e in as_list(body["EVENT"])] == users
    assert isinstance(body["EVENT"], dict) == (len(users) == 1)
    assert body["TOTAL_RECORDS"] == str(len(users))


@pytest.mark.parametrize("dates", [{}, {"STARTDATE": "", "STOPDATE": ""}])
def test_xmhist_hours_is_the_recent_past(xm: Xm, dates: Form) -> None:
    body = xm.ask("XMHIST", ACCOUNT=WINDOW, HOURS="24", **dates)
    assert body["TOTAL_RECORDS"] == "1"
    assert body["EVENT"]["ZONE_2"] == "004", "the openings of March 2024 are not in the last day"


def test_xmhist_limithist_keeps_the_newest(xm: Xm) -> None:
    [newest] = [e for e in xm.history(WINDOW) if e["zone"] == "004"]
    today = local(newest["received_us"]).strftime("%Y%m%d")
    window = {"ACCOUNT": WINDOW, "STARTDATE": "20240101", "STOPDATE": today}
    every = xm.ask("XMHIST", **window)
    assert [e["ZONE_2"] for e in every["EVENT"]] == ["004", "003", "002", "001"]
    assert every["TOTAL_RECORDS"] == "4"
    assert xm.ask("XMHIST", **window, LIMITHIST="10") == every
    two = xm.ask("XMHIST", **window, LIMITHIST="2")
    assert two == {"EVENT": every["EVENT"][:2], "TOTAL_RECORDS": "2"}
    assert xm.ask("XMHIST", **window, LIMITHIST="1") == {
        "EVENT": every["EVENT"][0],
        "TOTAL_RECORDS": "1",
    }
    assert xm.ask("XMHIST", **window, LIMITHIST="1", ARRAY="Y") == {
        "EVENT": every["EVENT"][:1],
        "TOTAL_RECORDS": "1",
    }


@pytest.mark.parametrize(
    "window",
    [
        {"HOURS": "9" * 20},
        {"HOURS": "9" * 5000},  # more digits than int() converts
        {"STARTDATE": "00010101", "STOPDATE": "99991231"},
        {"STARTDATE": "19700101", "STOPDATE": "99991231", "LIMITHIST": "9" * 20},
    ],
)
def test_xmhist_extreme_windows_and_limits(xm: Xm, window: Form) -> None:
    """Huge HOURS and LIMITHIST and the widest dates are answered, not a server error."""
    body = xm.ask("XMHIST", ACCOUNT=WINDOW, **window)
    assert [e["ZONE_2"] for e in body["EVENT"]] == ["004", "003", "002", "001"]
    assert body["TOTAL_RECORDS"] == "4"


# XMHIST: SERVICEONLY and NOMULTIPLES ---------------------------------------------------------


def test_xmhist_serviceonly_keeps_the_service_systems_events(xm: Xm) -> None:
    [alarm] = [a for a in xm.pending() if a["type"] == "FTT"]
    assert alarm["account_number"] == SERVICE
    body = xm.ask("XMHIST", ACCOUNT=SERVICE, HOURS="24", SERVICEONLY="Y")
    assert body["TOTAL_RECORDS"] == "1"
    event = body["EVENT"]
    assert isinstance(event, dict)
    assert set(event) == HISTORY_FIELDS
    assert (event["ACCOUNT_NUMBER"], event["INCIDENT_NUMBER"]) == (
        "   700050",
        str(alarm["alarm_id"]),
    )
    assert (event["PR_CHECKSUM"], event["TYPE"], event["HIST_TEXT"]) == (
        "SYSTEM",
        "FTT",
        "FAIL TO TEST",
    )
    every = xm.ask("XMHIST", ACCOUNT=SERVICE, HOURS="24", SERVICEONLY="N")
    assert sorted(e["PR_CHECKSUM"] for e in every["EVENT"]) == ["HISTORY", "PENDING", "SYSTEM"]
    assert xm.ask("XMHIST", ACCOUNT=SERVICE, HOURS="24") == every
    none = xm.ask("XMHIST", ACCOUNT=MAIN, HOURS="24", SERVICEONLY="Y")
    assert none == {"EVENT": [], "TOTAL_RECORDS": "0"}


@pytest.mark.parametrize(("account", "user"), [(MAIN, "003"), (SERVICE, "002")])
def test_xmhist_nomultiples_drops_pending_and_system_events(
    xm: Xm, account: str, user: str
) -> None:
    """MAIN: the burglary and the fire are pending, the restore belongs to the pending
    burglary. SERVICE: the burglary is pending, FAIL TO TEST is a system event. Only the
    openings (no alarm) are left."""
    body = xm.ask("XMHIST", ACCOUNT=account, HOURS="24", NOMULTIPLES="Y")
    assert body["TOTAL_RECORDS"] == "1"
    assert (body["EVENT"]["SEIA_CODE"], body["EVENT"]["ZONE_2"]) == ("E401", user)
    every = xm.ask("XMHIST", ACCOUNT=account, HOURS="24", NOMULTIPLES="N")
    assert int(every["TOTAL_RECORDS"]) == len(xm.history(account)) >= 3


def test_xmhist_nomultiples_keeps_settled_events_but_not_system_ones(xm: Xm) -> None:
    """SETTLED's burglary and FAIL TO TEST alarms are resolved: the burglary stays, the system
    event goes."""
    every = xm.ask("XMHIST", ACCOUNT=SETTLED, HOURS="24")
    assert sorted(e["PR_CHECKSUM"] for e in every["EVENT"]) == ["PENDING", "SYSTEM"]
    body = xm.ask("XMHIST", ACCOUNT=SETTLED, HOURS="24", NOMULTIPLES="Y")
    assert body["TOTAL_RECORDS"] == "1"
    assert (body["EVENT"]["SEIA_CODE"], body["EVENT"]["PR_CHECKSUM"]) == ("E130", "PENDING")


# XMHIST: bad fields --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "window",
    [
        {"STARTDATE": "2024-01-01", "STOPDATE": "20240102"},
        {"STARTDATE": "20240101", "STOPDATE": "2024-01-02"},
        {"STARTDATE": "20241301", "STOPDATE": "20241302"},
        {"STARTDATE": "20240230", "STOPDATE": "20240301"},
        {"STARTDATE": "20240101"},
        {},
        {"STARTDATE": "", "STOPDATE": "", "HOURS": ""},
        {"HOURS": "0"},
        {"HOURS": "x"},
        {"HOURS": "-1"},
        {"HOURS": "1.5"},
        {"HOURS": "\u00b2"},  # str.isdigit() says yes, int() says no
        {"HOURS": "\uff12\uff14"},  # full-width 24
    ],
)
def test_xmhist_without_a_usable_window_is_malformed(xm: Xm, window: Form) -> None:
    response = xm.call("XMHIST", ACCOUNT=MAIN, **window)
    assert response.status_code == 400, response.text
    assert response.json() == errors.MALFORMED


@pytest.mark.parametrize(
    ("fields", "invalid"),
    [
        ({"HOURS": "24"}, "ACCOUNT"),
        ({"ACCOUNT": "", "HOURS": "24"}, "ACCOUNT"),
        ({"ACCOUNT": "7000420000", "HOURS": "24"}, "ACCOUNT"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "x"}, "LIMITHIST"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "1.5"}, "LIMITHIST"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "ten"}, "LIMITHIST"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "\u00b2"}, "LIMITHIST"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "\uff11"}, "LIMITHIST"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "STARTTIME": "\u00b2\u00b2\u00b2\u00b2"}, "STARTTIME"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "SERVICEONLY": "X"}, "SERVICEONLY"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "NOMULTIPLES": "yes"}, "NOMULTIPLES"),
        ({"ACCOUNT": MAIN, "HOURS": "24", "ARRAY": "1"}, "ARRAY"),
        (
            {"ACCOUNT": MAIN, "STARTDATE": "20240325", "STARTTIME": "2460", "STOPDATE": "20240325"},
            "STARTTIME",
        ),
        (
            {"ACCOUNT": MAIN, "STARTDATE": "20240325", "STOPDATE": "20240325", "STOPTIME": "12:00"},
            "STOPTIME",
        ),
    ],
)
def test_xmhist_bad_field_is_invalid(xm: Xm, fields: Form, invalid: str) -> None:
    response = xm.call("XMHIST", **fields)
    assert response.status_code == 400, response.text
    assert response.json() == errors.field_invalid(invalid)
    assert response.json()["message"] == f"{invalid} is invalid"


# XMAPEND -------------------------------------------------------------------------------------


def test_xmapend_records_order_and_formats(xm: Xm) -> None:
    body = xm.ask("XMAPEND", SOURCE="DATAENTRY")
    assert set(body) == {"XMAPEND", "TOTAL_RECORDS"}
    records = body["XMAPEND"]
    assert body["TOTAL_RECORDS"] == str(len(records)) == "5"
    alarms = sorted(xm.pending(), key=lambda a: (a["priority"], a["pending_us"], a["alarm_id"]))
    assert [r["INCIDENT_NUMBER"] for r in records] == [str(a["alarm_id"]) for a in alarms]
    for record, alarm in zip(records, alarms, strict=True):
        assert set(record) == PENDING_FIELDS, "TRACK_GROUPING and CONTACT_LIST are not given"
        assert all(isinstance(value, str) for value in record.values()), record
        assert record["ACCOUNT_NUMBER"] == alarm["account_number"].rjust(9)
        received = local(alarm["received_us"])
        assert record["PEND_DATE"] == received.strftime("%m/%d/%Y")
        assert PEND_DATE_TEXT.fullmatch(record["PEND_DATE"])
        assert record["PEND_TIME"] == record["HISTORY_TIME"] == received.strftime("%H:%M:%S")
        assert CLOCK_TEXT.fullmatch(record["PEND_TIME"])
        assert record["PENDING_TIME"] == to_ntd(alarm["pending_us"], ZONE)
        assert record["HISTORY_EVENT_NTD"] == to_ntd(alarm["received_us"], ZONE)
        assert NTD_TEXT.fullmatch(record["PENDING_TIME"])
        assert NTD_TEXT.fullmatch(record["HISTORY_EVENT_NTD"])
        assert record["COMPANY_NAME"] == NAMES.get(alarm["account_number"], "")
        assert (record["TYPE"], record["PRIORITY"], record["HIST_TEXT"]) == (
            alarm["type"],
            alarm["priority"],
            alarm["hist_text"],
        )
    shown = [(r["ACCOUNT_NUMBER"].strip(), r["TYPE"]) for r in records]
    # the fire came after the burglary of the same account, yet comes first (PRIORITY A < C);
    # the two burglaries (both C) are oldest first
    assert (
        shown.index((MAIN, "FIRE")) < shown.index((MAIN, "BURG")) < shown.index((SERVICE, "BURG"))
    )
    assert sorted(t for _, t in shown) == ["BURG", "BURG", "FIRE", "FTT", "UNKN"]
    # the burglary's pending record and its history event agree
    [burglary] = [e for e in xm.history(MAIN) if e["code"] == "E130"]
    [record] = [r for r in records if r["INCIDENT_NUMBER"] == str(burglary["incident_number"])]
    history = xm.ask("XMHIST", ACCOUNT=MAIN, HOURS="24")["EVENT"][-1]
    assert history["INCIDENT_NUMBER"] == record["INCIDENT_NUMBER"]
    assert history["HISTORY_EVENT_NTD"] == record["HISTORY_EVENT_NTD"]
    assert history["HISTORY_EVENT_DATE"][:6] == record["PEND_DATE"][:6]
    assert history["HISTORY_EVENT_DATE"][-8:] == record["PEND_TIME"]
    assert record["COMPANY_NAME"] == "Subscriber 42"
    [unknown] = [r for r in records if r["TYPE"] == "UNKN"]
    assert (unknown["ACCOUNT_NUMBER"], unknown["COMPANY_NAME"]) == ("   709999", "")


@pytest.mark.parametrize(
    ("tag", "key"),
    [
        (None, "HISTORY_EVENT_NTD"),
        ("", "HISTORY_EVENT_NTD"),
        ("Y", "HISTORY_EVENT_NTD"),
        ("N", "HISTORY-EVENT-NTD"),
    ],
)
def test_xmapend_fixed_history_tag(xm: Xm, tag: str | None, key: str) -> None:
    default = xm.ask("XMAPEND", SOURCE="DATAENTRY")["XMAPEND"]
    fields = (
        {"SOURCE": "DATAENTRY"}
        if tag is None
        else {"SOURCE": "DATAENTRY", "FIXED_HISTORY_TAG": tag}
    )
    records = xm.ask("XMAPEND", **fields)["XMAPEND"]
    assert len(records) == len(default) > 0
    other = ({"HISTORY_EVENT_NTD", "HISTORY-EVENT-NTD"} - {key}).pop()
    for record, plain in zip(records, default, strict=True):
        assert key in record
        assert other not in record
        assert record[key] == plain["HISTORY_EVENT_NTD"]
        assert set(record) - {key} == PENDING_FIELDS - {"HISTORY_EVENT_NTD"}


@pytest.mark.parametrize("tag", ["X", "y", "YES", "n"])
def test_xmapend_other_fixed_history_tag_is_invalid(xm: Xm, tag: str) -> None:
    response = xm.call("XMAPEND", SOURCE="DATAENTRY", FIXED_HISTORY_TAG=tag)
    assert response.status_code == 400, response.text
    assert response.json() == errors.field_invalid("FIXED_HISTORY_TAG")
    assert response.json() == {
        "status": "error",
        "message": "FIXED_HISTORY_TAG is invalid",
        "errno": 3,
    }


@pytest.mark.parametrize("source", [None, "", "dataentry", "OTHER", "DATAENTRY "])
def test_xmapend_source_must_be_dataentry(xm: Xm, source: str | None) -> None:
    fields = {} if source is None else {"SOURCE": source}
    response = xm.call("XMAPEND", **fields)
    assert response.status_code == 400, response.text
    assert response.json() == errors.field_invalid("SOURCE")


# XMAINPRO ------------------------------------------------------------------------------------


def test_xmainpro_without_operators_is_empty(xm: Xm) -> None:
    assert xm.ask("XMAINPRO") == {"XMAINPRO": [], "TOTAL_RECORDS": "0"}


# authentication ------------------------------------------------------------------------------


def test_published_sha1_example() -> None:
    values = ("ourclient", "documentation", "03012024090823", "nE3MSLaXYb23rp7DTDch")
    expected = "1a0c0a42e5adb089ef2a8707029aad2450fbf83b"
    assert digest.sha1_digest(*values, "secretpassword") == expected
    assert published_sha1(*values, "secretpassword") == expected


@pytest.mark.parametrize("urlencoded", [False, True])
def test_sha1_by_the_published_recipe_with_a_current_date(xm: Xm, urlencoded: bool) -> None:
    date = datetime.now(UTC).strftime("%d%m%Y%H%M%S")
    nonce = new_nonce()
    signed = published_sha1(APPKEY, USER, date, nonce, PASSWORD)
    headers = svc_headers(APPKEY, USER, date, nonce, signed)
    response = xm.send({"*setMethod": "XMAINPRO"}, headers, urlencoded=urlencoded)
    assert response.status_code == 200, response.text
    assert response.json() == {"XMAINPRO": [], "TOTAL_RECORDS": "0"}


def test_hmac_sha256_signs_the_form(xm: Xm) -> None:
    form = {"*setMethod": "XMHIST", "ACCOUNT": MAIN, "HOURS": "24", "LIMITHIST": "1"}
    response = xm.send(form, hmac_headers(form))
    assert response.status_code == 200, response.text
    assert response.json()["EVENT"]["SEIA_CODE"] == "E401"
    assert response.json()["EVENT"]["ACCOUNT_NUMBER"] == "   700042"
    changed = [
        {**form, "ACCOUNT": UNKNOWN},
        {**form, "LIMITHIST": "2"},
        {**form, "ARRAY": "Y"},
        {k: v for k, v in form.items() if k != "LIMITHIST"},
    ]
    for sent in changed:
        signed = hmac_headers(form)  # signs the original form, then another one is sent
        xm.refused(functools.partial(xm.send, sent, signed), "wrong digest")


def test_hmac_sha256_from_a_user_that_may_also_use_sha1(xm: Xm) -> None:
    form = {"*setMethod": "XMAINPRO"}
    headers = hmac_headers(form, username=USER, password=PASSWORD)
    response = xm.send(form, headers)
    assert response.status_code == 200, response.text


def test_hmac_only_user_cannot_use_sha1(xm: Xm) -> None:
    form = {"*setMethod": "XMAINPRO"}
    xm.refused(
        lambda: xm.send(form, sha1_headers(username=HMAC_USER, password=HMAC_PASSWORD)),
        "sha1 digest from an hmac-only user",
    )
    response = xm.send(form, hmac_headers(form))
    assert response.status_code == 200, response.text


def test_replayed_nonce_is_refused(xm: Xm) -> None:
    form = {"*setMethod": "XMAINPRO"}
    headers = sha1_headers()
    first = xm.send(form, headers)
    assert first.status_code == 200, first.text
    xm.refused(lambda: xm.send(form, headers), "replayed nonce")
    # the same nonce with a fresh date and digest is still a replay for this user
    again = sha1_headers(nonce=headers["X-SVC-NONCE"])
    xm.refused(lambda: xm.send(form, again), "replayed nonce")
    # another user may use the same nonce
    other = hmac_headers(form, nonce=headers["X-SVC-NONCE"])
    response = xm.send(form, other)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("seconds", [-301, -420, 360, 600])
def test_date_outside_the_window_is_refused(xm: Xm, seconds: int) -> None:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    headers = sha1_headers(date=digest.date_header(moment))
    xm.refused(lambda: xm.send({"*setMethod": "XMAINPRO"}, headers), "date outside the window")


@pytest.mark.parametrize("seconds", [-280, 280])
def test_date_inside_the_window_is_accepted(xm: Xm, seconds: int) -> None:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    headers = sha1_headers(date=digest.date_header(moment))
    response = xm.send({"*setMethod": "XMAINPRO"}, headers)
    assert response.status_code == 200, response.text


def test_wrong_digest_is_refused(xm: Xm) -> None:
    headers = sha1_headers(password="not-the-password")
    xm.refused(lambda: xm.send({"*setMethod": "XMAINPRO"}, headers), "wrong digest")


def test_unknown_user_is_refused(xm: Xm) -> None:
    headers = sha1_headers(username="nobody")
    xm.refused(lambda: xm.send({"*setMethod": "XMAINPRO"}, headers), "unknown user")


@pytest.mark.parametrize("missing", HEADER_NAMES)
def test_missing_header_is_refused(xm: Xm, missing: str) -> None:
    headers = {k: v for k, v in sha1_headers().items() if k != missing}
    xm.refused(lambda: xm.send({"*setMethod": "XMAINPRO"}, headers), f"missing {missing.lower()}")


@pytest.mark.parametrize(
    ("header", "value", "reason"),
    [
        ("X-SVC-DATE", "2024-01-03 09:08:23", "malformed date"),
        ("X-SVC-NONCE", "short", "malformed nonce"),
        ("X-SVC-DIGEST", "A" * 40, "malformed digest"),
        ("X-SVC-APPKEY", "k" * 65, "appkey too long"),
    ],
)
def test_malformed_header_is_refused(xm: Xm, header: str, value: str, reason: str) -> None:
    headers = {**sha1_headers(), header: value}
    xm.refused(lambda: xm.send({"*setMethod": "XMAINPRO"}, headers), reason)


# on a real process: the smoke test of the query interface (signed queries), and SIGTERM
def test_replay_after_a_restart_is_refused(served_xm: Xm) -> None:
    """Nonces are kept in the database: a restart does not forget them."""
    xm = served_xm
    form = {"*setMethod": "XMAINPRO"}
    headers = sha1_headers()
    first = xm.send(form, headers)
    assert first.status_code == 200, first.text
    assert xm.server.stop() == 0
    xm.server.start()
    xm.refused(lambda: xm.send(form, headers), "replayed nonce")
    fresh = xm.send(form, sha1_headers())
    assert fresh.status_code == 200, fresh.text


# errors before and around the methods --------------------------------------------------------


@pytest.mark.parametrize("name", ["XMFOO", "", None, "XMHISTORYLONG", "xmhist", "XMHIST "])
def test_invalid_method(xm: Xm, name: str | None) -> None:
    fields = {"ACCOUNT": MAIN, "HOURS": "24"}
    response = xm.call(name, **fields)
    assert response.status_code == 400, response.text
    assert response.json() == errors.invalid_method(name or "")
    assert all(isinstance(v, str) for v in response.json().values())


def test_invalid_method_body_literally() -> None:
    assert errors.invalid_method("XMHISTORYLONG")["ADDITIONAL_INFO"] == (
        "%3CMETHOD_NAME%3EXMHISTOR%3C%2FMETHOD_NAME%3E"
    )
    assert errors.invalid_method("XMFOO") == {
        "ERROR_CODE": "999",
        "ERROR_DESCRIPTION": "INVALID%20METHOD%20METHOD",
        "PROGRAM_ERROR": "11",
        "PROGRAM_ERROR_DESCRIPTION": "Missing%20or%20Duplicate%20key",
        "ERROR_ON_LINE": "240",
        "ADDITIONAL_INFO": "%3CMETHOD_NAME%3EXMFOO%20%20%20%3C%2FMETHOD_NAME%3E",
    }


def test_invalid_method_literal_over_http(xm: Xm) -> None:
    response = xm.call("XMHISTORYLONG")
    assert response.status_code == 400
    assert response.json()["ADDITIONAL_INFO"] == "%3CMETHOD_NAME%3EXMHISTOR%3C%2FMETHOD_NAME%3E"


@pytest.mark.parametrize(
    "params", [{"*view": "xmsubmit"}, {"dataSource": "other", "*view": "xmsubmit"}]
)
def test_query_string_without_datasource_methods(xm: Xm, params: Form) -> None:
    form = {"*setMethod": "XMAINPRO"}
    response = xm.send(form, sha1_headers(), params=params)
    assert response.status_code == 400, response.text
    assert response.json() == errors.field_invalid("dataSource")
    # unauthenticated: refused before the query string is looked at
    response = xm.send(form, {}, params=params)
    assert response.status_code == 401, response.text
    assert response.json() == errors.AUTHENTICATION_FAILED
