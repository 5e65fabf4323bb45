"""A provisioned station for the console's tests: the line, accounts and operators (every one
with the password ``PASSWORD``), and the ``Hub`` that posts signals and reads the database."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.response import Agency, AgencyKind, Contact, Phone, PhoneKind, Zone
from alarmhub.store import contacts as contact_store
from alarmhub.store import operator_access, operators, queries, response
from alarmhub.store.engine import open_engine
from tests.support.console_client import PASSWORD, SUCCESS, Console, Row
from tests.support.database import database_url
from tests.support.processes import Server, Station, cli, provision, wait_for

DNIS = "C1"
MASK = "70####"

OPERATORS = {  # code: (name, role)
    "OP1": ("Olive Operator", "operator"),
    "OP2": ("Otto Operator", "operator"),
    "OP3": ("Oona Operator", "operator"),
    "OP4": ("Omar Operator", "operator"),
    "SUP": ("Sam Supervisor", "supervisor"),
    "LCK": ("Lena Locked", "operator"),
    "DIS": ("Dora Disabled", "operator"),
    "XSS": ("<script>alert(1)</script>", "operator"),
}


def engine_of(data_dir: Path) -> Engine:
    return open_engine(database_url(data_dir))


def provision_console(data_dir: Path, accounts: int = 30) -> tuple[str, Engine]:
    """Drivers and token (``provision``), the line ``C1`` masked ``70####``, accounts
    700001..7000NN and the operators above, every one with password PASSWORD."""
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    csv_file = data_dir / "accounts.csv"
    rows = "".join(f"70{n:04d},Subscriber {n},{n} Main Street,Springfield\n" for n in range(1, 31))
    csv_file.write_text("account,name,street,city\n" + rows)
    cli(data_dir, "account", "import", str(csv_file))
    engine = engine_of(data_dir)
    for code, (name, role) in OPERATORS.items():
        operators.add_operator(engine, code, name, role, PASSWORD)
    operator_access.set_disabled(engine, "DIS", True, now_us())
    return token, engine


def refused(answer: httpx.Response, status: int, code: str) -> str:
    """The message of a refusal, after checking its status, envelope and code."""
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status_code"] == status
    assert body["status"] == "error"
    assert body["error_code"] == code, body
    assert body["message"]
    return str(body["message"])


@dataclass
class Hub:
    """A provisioned station with consoles, and an engine on its database."""

    station: Station
    engine: Engine
    consoles: list[Console] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.station.url

    def console(self) -> Console:
        console = Console(self.url)
        self.consoles.append(console)
        return console

    def signal(self, account: int, code: str, zone: int) -> None:
        body = {"dnis": DNIS, "panel": str(account), "code": code, "zone_or_user": str(zone)}
        answer = self.station.post(body)
        assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text

    def alarm_of(self, account: int, zone: int) -> Row:
        """The alarm a signal of ``account`` and ``zone`` raised, once it exists."""
        number = f"70{account:04d}"

        def find() -> Row | None:
            with self.engine.connect() as conn:
                for state in ("pending", "in_process", "on_hold", "resolved"):
                    for row in queries.alarms_in(conn, state):
                        if row["account_number"] == number and row["zone"] == f"{zone:03d}":
                            return row
            return None

        return wait_for(find, f"the alarm of account {number} zone {zone}")

    def alarm(self, alarm_id: int) -> Row:
        with self.engine.connect() as conn:
            row = queries.alarm(conn, alarm_id)
        assert row is not None
        return row

    def operator(self, code: str) -> Row:
        with self.engine.connect() as conn:
            return next(r for r in operators.list_operators(conn) if r["code"] == code)

    def actions_on(self, alarm_id: int) -> list[str]:
        """The TYPEs of the OPERATOR records of one alarm, oldest first."""
        with self.engine.connect() as conn:
            events = queries.alarm_detail(conn, alarm_id)["events"]
        return [e["type"] for e in events if e["pr_checksum"] == "OPERATOR"]


@contextmanager
def served(
    data_dir: Path,
    token: str,
    engine: Engine,
    secrets: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[Hub]:
    """A ``Hub`` on a real ``alarmhub serve`` of ``data_dir`` (with ``env`` added to its
    environment) until the block ends; then its consoles closed, the server stopped cleanly,
    and none of ``secrets`` (or the operators' password) in its log."""
    server = Server(data_dir, env=env or {}).start()
    hub = Hub(Station(server, token, data_dir), engine)
    try:
        yield hub
    finally:
        for console in hub.consoles:
            console.close()
        engine.dispose()
        log = server.log()
        assert server.stop() == 0, log
        for secret in (PASSWORD, *secrets):
            assert secret not in log, "a password or passcode reached the log"


BUSY_SITE = 42  # account 700042: an alarm screen with every block on it
BUSY_ACCOUNT = f"70{BUSY_SITE:04d}"
BUSY_PASSCODE = "blue-heron"
FIRE_ZONE = 5
SIBLING_SIGNALS = (("E130", 1), ("E130", 2), ("E130", 3), ("E130", 4), ("E301", 9))
BUSY_CONTACTS = (  # name, relation, notes; three numbers each
    ("Alice Longname-Owner", "owner", "Has the alarm code; lives 20 minutes away"),
    ("Bob Keyholder", "keyholder", "Night shift at the hospital: try his work number first"),
    ("Carol Facilities-Manager", "facilities manager", ""),
    ("Dave Neighbour", "neighbour", "Can look from the street only"),
)


def furnish_busy_site(data_dir: Path, engine: Engine) -> None:
    """Account 700042 with all the response data an alarm screen shows: a long name and
    address, four contacts of three numbers each on PRIMARY (the first with the passcode
    ``BUSY_PASSCODE``), zone 005 described, police, fire and medical with a permit, and an
    open/close schedule that raises no late alarm."""
    cli(
        data_dir, "account", "add", BUSY_ACCOUNT,
        "--name", "Springfield Riverside Community Arts Centre and Theatre",
        "--street", "1742 Evergreen Terrace, Riverside Business Park, Unit 12B",
        "--city", "Springfield", "--state", "OR",
    )  # fmt: skip
    for n, (name, relation, notes) in enumerate(BUSY_CONTACTS):
        phones = tuple(
            Phone(f"555-{n + 1}{k}0{k}", kind)
            for k, kind in enumerate((PhoneKind.MOBILE, PhoneKind.HOME, PhoneKind.WORK))
        )
        contact = Contact(BUSY_ACCOUNT, name, phones, relation=relation, notes=notes)
        hashed = response.hash_passcode(BUSY_PASSCODE) if n == 0 else None
        contact_store.add_contact(engine, contact, passcode_hash=hashed)
    response.set_zone(
        engine,
        Zone(BUSY_ACCOUNT, f"{FIRE_ZONE:03d}", "MAIN STAGE SMOKE", equipment="beam detector"),
    )
    for code, kind, name, phone in (
        ("SPD", AgencyKind.POLICE, "Springfield Police Department, North Precinct", "555-0911"),
        ("SFD", AgencyKind.FIRE, "Springfield Fire and Rescue, Station 7", "555-0912"),
        ("SMS", AgencyKind.MEDICAL, "Springfield Medical Services", "555-0913"),
    ):
        response.add_agency(engine, Agency(code, kind, name, phone))
    agencies = {"police": "SPD", "fire": "SFD", "medical": "SMS"}
    response.set_account_response(engine, BUSY_ACCOUNT, agencies, "P-2026-00417-FIRE")
    # open around the clock (a close at the open ends the next day): the site's opening and
    # closing of busy_fire raise no UNSCHEDULED OPEN or EARLY CLOSE whatever the hour the test runs
    cli(
        data_dir, "schedule", "set", BUSY_ACCOUNT, "--day", "mon-sun", "--open", "00:00",
        "--close", "00:00", "--no-late-to-open", "--no-late-to-close", "--no-early-close",
    )  # fmt: skip


def busy_fire(hub: Hub, code: str) -> tuple[int, list[int]]:
    """A fire of account 700042 in process with ``code`` (signed on, not receiving), with its
    restore, the site's five other alarms (handed to ``code``, as the site's), an opening and a
    closing, eight calls (to the first three contacts: the fourth is next), six notes and a
    wrong passcode in its action log: the fire's id and
    its siblings'. Fewer than the runaway limit of signals (10 in 2 minutes)."""
    console = hub.console().sign_in(code, PASSWORD)
    console.ok("/receiving", {"receiving": False})
    hub.signal(BUSY_SITE, "E110", FIRE_ZONE)
    fire = int(hub.alarm_of(BUSY_SITE, FIRE_ZONE)["alarm_id"])
    console.ok(f"/alarms/{fire}/take")
    hub.signal(BUSY_SITE, "R110", FIRE_ZONE)
    for signal_code, zone in SIBLING_SIGNALS:
        hub.signal(BUSY_SITE, signal_code, zone)
    siblings = [int(hub.alarm_of(BUSY_SITE, zone)["alarm_id"]) for _, zone in SIBLING_SIGNALS]
    hub.signal(BUSY_SITE, "R401", 3)
    hub.signal(BUSY_SITE, "E401", 3)
    contacts = console.get(f"/alarms/{fire}").json()["response"]["call_list"]["contacts"]
    outcomes = ("no-answer", "busy", "left-message", "wrong-number")
    for n in range(8):
        contact = contacts[n % 3]  # the last contact is the next one to call
        body = {
            "contact_id": contact["id"],
            "phone": contact["phones"][n % 3]["number"],
            "outcome": outcomes[n % len(outcomes)],
            "text": f"call {n + 1}: nobody who could come to the site; asked to call back",
        }
        console.ok(f"/alarms/{fire}/call", body)
    for n in range(6):
        text = f"note {n + 1}: the fire department asked for the side entrance to be kept clear"
        console.ok(f"/alarms/{fire}/note", {"text": text})
    console.ok(f"/alarms/{fire}/passcode", {"passcode": "wrong-guess"})
    return fire, siblings


@contextmanager
def served_busy_site(data_dir: Path) -> Iterator[Hub]:
    """``served``, on a console station with the busy site of ``furnish_busy_site``."""
    token, engine = provision_console(data_dir)
    furnish_busy_site(data_dir, engine)
    with served(data_dir, token, engine, [BUSY_PASSCODE]) as hub:
        yield hub
