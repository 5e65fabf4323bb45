"""A node for the integrator API's account and response-data tests: the console's station (line
C1, accounts 700001..700030), two agencies, optionally many more accounts, and API keys of several
scopes and ranges made with ``alarmhub apikey create``; the ``ApiHub`` calls the API with a key
by its name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from alarmhub.core.account import Account
from alarmhub.store import provisioning
from alarmhub.store import schema as s
from tests.support.console_station import DNIS, provision_console
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, cli_json

BASE = "/api/v1"
KEYS = {  # name: (scopes, account range)
    "admin": (("accounts:read", "accounts:write"), ""),
    "reader": (("accounts:read",), ""),
    "alarms": (("alarms:read",), ""),
    "dealer1": (("accounts:read", "accounts:write"), "7001"),
    "dealer2": (("accounts:read", "accounts:write"), "70002"),
    "gone": (("accounts:read",), ""),  # revoked
}
Row = dict[str, Any]


class ApiHub(NodeHub):
    keys: dict[str, str]

    def call(self, who: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A request to ``/api/v1`` + ``path`` with the key named ``who``."""
        headers = {"Authorization": f"Bearer {self.keys[who]}", **kwargs.pop("headers", {})}
        return self.station.client.request(method, BASE + path, headers=headers, **kwargs)

    def ok(self, who: str, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        """The answer's JSON (None when empty), after checking its status."""
        answer = self.call(who, method, path, **kwargs)
        assert answer.status_code == status, answer.text[:500]
        return answer.json() if answer.content else None

    def history(self, account: str) -> list[str]:
        """HIST_TEXT of the account's audit records of the API, oldest first."""
        with self.engine.connect() as conn:
            query = select(s.history.c.hist_text).where(
                s.history.c.account_number == account, s.history.c.type == "API"
            )
            return list(conn.execute(query.order_by(s.history.c.incident_number)).scalars())


def refused(answer: httpx.Response, status: int, code: str) -> Row:
    """The problem details of a refusal, after checking its status, media type and code."""
    assert answer.status_code == status, answer.text[:500]
    assert answer.headers["content-type"] == "application/problem+json"
    body: Row = answer.json()
    assert body["status"] == status and body["code"] == code, body
    return body


@contextmanager
def api_hub(data_dir: Path, bulk: int = 0) -> Iterator[ApiHub]:
    """The node of ``data_dir`` with the keys of ``KEYS`` and ``bulk`` more accounts
    (800000, 800001, ...), loaded by the store's import as ``account import`` does."""
    token, engine = provision_console(data_dir)
    if bulk:
        provisioning.upsert_accounts(
            engine, (Account(f"8{n:05d}", f"Bulk {n}") for n in range(bulk))
        )
    cli(data_dir, "agency", "add", "SPD", "--kind", "police", "--name", "SPRINGFIELD PD")
    cli(data_dir, "agency", "add", "SFD", "--kind", "fire", "--name", "SPRINGFIELD FD")
    keys = {}
    for name, (scopes, accounts) in KEYS.items():
        args = [arg for scope in scopes for arg in ("--scope", scope)]
        if accounts:
            args += ["--accounts", accounts]
        made = cli_json(data_dir, "apikey", "create", "--name", name, *args)
        assert isinstance(made, dict)
        keys[name] = made["key"]
    cli(data_dir, "apikey", "revoke", "gone")
    with running(ApiHub, data_dir, token, engine, DNIS) as hub:
        hub.keys = keys
        yield hub
