"""A node in the test's process for the integrator API's tests: the console's station (line C1
masked ``70####``, accounts 700001..700030, its operators), API keys made by ``alarmhub apikey
create`` (some revoked, when asked), optionally agencies and many more accounts; the ``ApiHub``
calls the API with a key by its name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from alarmhub.core.account import Account
from alarmhub.store import provisioning, schema
from tests.support.console_station import DNIS, provision_console
from tests.support.node_hub import NodeHub, Row, running
from tests.support.processes import cli, cli_json

BASE = "/api/v1"
KeySpec = tuple[tuple[str, ...], str]
"""A key's scopes and its account range ('' : every account)."""
Agency = tuple[str, str, str]
"""An agency's code, kind and name, as ``alarmhub agency add`` takes them."""


@dataclass
class ApiHub(NodeHub):
    """The hub with the keys made for the test, by name."""

    keys: dict[str, str] = field(default_factory=dict)

    def call(
        self, key: str | None, method: str, path: str, body: Any = None, **more: Any
    ) -> httpx.Response:
        """``method path`` under /api/v1 with the key named ``key`` (None: no key), ``body`` as
        its JSON (None: no body); ``more`` as httpx takes it (``params``, ``headers``,
        ``content``)."""
        headers = dict(more.pop("headers", None) or {})
        if key is not None:
            headers["Authorization"] = f"Bearer {self.keys[key]}"
        return self.station.client.request(method, BASE + path, json=body, headers=headers, **more)

    def ok(
        self, key: str, method: str, path: str, body: Any = None, status: int = 200, **more: Any
    ) -> Any:
        """The answer's JSON, after checking its status and media type."""
        answer = self.call(key, method, path, body, **more)
        assert answer.status_code == status, answer.text[:500]
        assert answer.headers["content-type"] == "application/json"
        return answer.json()

    def audit_texts(self, account: str) -> list[str]:
        """The HIST_TEXT of the account's API audit records ('': the station's), oldest first."""
        h = schema.history.c
        query = (
            select(h.hist_text)
            .where(h.account_number == account, h.type == "API")
            .order_by(h.event_id)
        )
        with self.engine.connect() as conn:
            return [str(t) for t in conn.execute(query).scalars()]


def problem(answer: httpx.Response, status: int, code: str) -> Row:
    """A refusal's problem details, after checking its status, media type and code."""
    assert answer.status_code == status, answer.text[:500]
    assert answer.headers["content-type"] == "application/problem+json"
    body = dict(answer.json())
    assert (body["status"], body["code"]) == (status, code), body
    return body


@contextmanager
def api_hub(
    data_dir: Path,
    keys: Mapping[str, KeySpec],
    *,
    revoked: Iterable[str] = (),
    agencies: Iterable[Agency] = (),
    bulk: int = 0,
    api_user: tuple[str, str] = ("", ""),
) -> Iterator[ApiHub]:
    """The console's station with ``keys`` made (those named in ``revoked`` then revoked),
    ``agencies`` added, ``bulk`` more accounts (800000, 800001, ..., loaded by the store's
    import as ``account import`` does) and, when named, a query interface ``api_user`` (name,
    password) the hub signs as; its node running in this process (UTC)."""
    token, engine = provision_console(data_dir)
    if bulk:
        provisioning.upsert_accounts(
            engine, (Account(f"8{n:05d}", f"Bulk {n}") for n in range(bulk))
        )
    for code, kind, name in agencies:
        cli(data_dir, "agency", "add", code, "--kind", kind, "--name", name)
    made: dict[str, str] = {}
    for name, (scopes, accounts) in keys.items():
        args = [a for scope in scopes for a in ("--scope", scope)]
        if accounts:
            args += ["--accounts", accounts]
        created = cli_json(data_dir, "apikey", "create", "--name", name, *args)
        assert isinstance(created, dict)
        made[name] = str(created["key"])
    for name in revoked:
        cli(data_dir, "apikey", "revoke", name)
    if api_user[0]:
        cli(data_dir, "apiuser", "add", api_user[0], "--password", api_user[1])
    utc = {"ALARMHUB_TIMEZONE": "UTC"}
    with running(ApiHub, data_dir, token, engine, DNIS, api_user, utc) as hub:
        hub.keys.update(made)
        yield hub
