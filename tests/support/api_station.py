"""A node in the test's process for the integrator API's tests: the console's station (line C1
masked ``70####``, accounts 700001..700030, its operators), API keys made by ``alarmhub apikey
create``, and requests made with one of them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from alarmhub.store import schema
from tests.support.console_station import DNIS, provision_console
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli_json

KeySpec = tuple[tuple[str, ...], str]
"""A key's scopes and its account range ('' : every account)."""


@dataclass
class ApiHub(NodeHub):
    """The hub with the keys made for the test, by name."""

    keys: dict[str, str] = field(default_factory=dict)

    def call(
        self,
        key: str | None,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """``method path`` under /api/v1 with the key named ``key`` (None: no key)."""
        sent = dict(headers or {})
        if key is not None:
            sent["Authorization"] = f"Bearer {self.keys[key]}"
        return self.station.client.request(
            method, f"/api/v1{path}", json=body, params=params, headers=sent
        )

    def ok(self, key: str, method: str, path: str, body: Any = None, **more: Any) -> Any:
        answer = self.call(key, method, path, body, **more)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        return answer.json()

    def audit_texts(self, account: str) -> list[str]:
        """The HIST_TEXT of the account's API audit records, oldest first."""
        h = schema.history.c
        query = (
            select(h.hist_text)
            .where(h.account_number == account, h.type == "API")
            .order_by(h.event_id)
        )
        with self.engine.connect() as conn:
            return [str(t) for t in conn.execute(query).scalars()]


def problem(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """A refusal's problem details, after checking its status, media type and code."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    body = dict(answer.json())
    assert (body["status"], body["code"]) == (status, code), body
    return body


@contextmanager
def api_hub(data_dir: Path, keys: Mapping[str, KeySpec]) -> Iterator[ApiHub]:
    """The console's station with ``keys`` made, its node running in this process (UTC)."""
    token, engine = provision_console(data_dir)
    made: dict[str, str] = {}
    for name, (scopes, accounts) in keys.items():
        args = [a for scope in scopes for a in ("--scope", scope)]
        if accounts:
            args += ["--accounts", accounts]
        created = cli_json(data_dir, "apikey", "create", "--name", name, *args, "--json")
        assert isinstance(created, dict)
        made[name] = str(created["key"])
    env = {"ALARMHUB_TIMEZONE": "UTC"}
    with running(ApiHub, data_dir, token, engine, DNIS, env=env) as hub:
        hub.keys.update(made)
        yield hub
