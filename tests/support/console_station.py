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
from alarmhub.store import operator_access, operators, queries
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
    data_dir: Path, token: str, engine: Engine, secrets: Sequence[str] = ()
) -> Iterator[Hub]:
    """A ``Hub`` on a real ``alarmhub serve`` of ``data_dir`` until the block ends; then its
    consoles closed, the server stopped cleanly, and none of ``secrets`` (or the operators'
    password) in its log."""
    server = Server(data_dir).start()
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
