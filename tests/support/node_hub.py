"""A station node running in the test's process, with the consoles of its operators: the
``NodeHub`` that posts signals (waiting until each is routed), signs operators in, asks the query
interface and reads the database. Test modules subclass it for what only they need."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alarmhub.store import queries
from alarmhub.store import schema as s
from tests.support.console_client import PASSWORD, Console
from tests.support.in_process import InProcessStation, in_process_node
from tests.support.processes import wait_for
from tests.support.xm_signing import PARAMS, PATH, sha1_headers

ROUTED_DEADLINE_S = 20
Row = dict[str, Any]
H = TypeVar("H", bound="NodeHub")


@dataclass
class NodeHub:
    """The node's station (signals, query interface) and an engine on its database. The
    signals of one module come one at a time: the newest incident number is the one posted."""

    station: InProcessStation
    engine: Engine
    dnis: str
    api_user: tuple[str, str] = ("", "")
    consoles: dict[str, Console] = field(default_factory=dict)

    def console(self, code: str) -> Console:
        """Operator ``code`` signed in (once), not receiving: the tests take the alarms."""
        if code not in self.consoles:
            transport = self.station.client._transport
            console = Console(self.station.url, transport).sign_in(code, PASSWORD)
            console.ok("/receiving", {"receiving": False})
            self.consoles[code] = console
        return self.consoles[code]

    def sign_in_all(self: H, codes: tuple[str, ...] | Mapping[str, Any]) -> H:
        """Sign every operator in before any alarm is raised (a sign-in receives, and would be
        handed one)."""
        for code in codes:
            self.console(code)
        return self

    def post(self, account: str, code: str = "E130", zone: str = "1", area: str = "01") -> int:
        """Post a signal of ``account`` (line masked ``70####``) and wait until it is routed;
        its incident number (the alarm's, when it raised one)."""
        body = {"dnis": self.dnis, "panel": account[2:], "code": code, "zone_or_user": zone}
        answer = self.station.post({**body, "area": area})
        assert answer.status_code == 200, answer.text
        with self.engine.connect() as conn:
            incident = int(conn.execute(select(func.max(s.signal.c.incident_number))).scalar_one())
        wait_for(lambda: self.routed(incident), f"signal {incident} routed", ROUTED_DEADLINE_S)
        return incident

    def routed(self, incident: int) -> bool:
        with self.engine.connect() as conn:
            return bool(queries.history_of_incident(conn, incident))

    def alarm(self, alarm_id: int) -> Row:
        with self.engine.connect() as conn:
            row = queries.alarm(conn, alarm_id)
        assert row is not None
        return row

    def xm(self, method: str, **fields: str) -> dict[str, Any]:
        """A query interface answer, signed as the hub's API user."""
        parts = {name: (None, value) for name, value in {"*setMethod": method, **fields}.items()}
        headers = sha1_headers(*self.api_user)
        answer = self.station.client.post(PATH, params=PARAMS, files=parts, headers=headers)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@contextmanager
def running(
    hub_class: type[H],
    data_dir: Path,
    token: str,
    engine: Engine,
    dnis: str,
    api_user: tuple[str, str] = ("", ""),
    env: Mapping[str, str] | None = None,
) -> Iterator[H]:
    """A hub on a node of ``data_dir`` running in this process until the block ends; then its
    consoles are closed and the engine disposed."""
    with in_process_node(data_dir, {"ALARMHUB_RUNAWAY_LIMIT": "1000", **(env or {})}) as node:
        hub = hub_class(InProcessStation(node, token, data_dir), engine, dnis, api_user)
        try:
            yield hub
        finally:
            for console in hub.consoles.values():
                console.close()
            engine.dispose()
