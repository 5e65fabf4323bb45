"""Fuzz the integrator API's writes in-process (``api/``): JSON bodies of every shape (raw
bytes, JSON values, objects with the real member names, mutated objects) against every endpoint
that takes one, with path segments of any text (accounts, ids past 64 bits, dates, zones), on a
real SQLite database through a stand-in writer that commits each change at once. A key with
every scope and a key with an account range take turns. Every answer must be a success (200 or
201 with a JSON object, 204 with nothing) or a problem of decisions section 10: 403
``API-SCOPE``, 404 ``API-NOTFOUND``, 409 ``API-CONFLICT``, 412 ``API-ETAG``, 413 or 422
``API-INPUT``. Argon2 is made cheap here (its parameters, not its code path): the hashes' cost
is measured in ``bench/api_hashing.py``."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
from argon2 import PasswordHasher
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Connection
from starlette.applications import Starlette
from starlette.exceptions import HTTPException

from alarmhub import settings as settings_module
from alarmhub.api import routes
from alarmhub.clock import now_us
from alarmhub.core.account import Account
from alarmhub.core.api_keys import SCOPES
from alarmhub.node.app import _http_error
from alarmhub.node.listener_limits import StreamBudget
from alarmhub.store import api_keys, provisioning
from alarmhub.store import response as response_store
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from tests.fuzz.common import FUZZ, Counter, call
from tests.fuzz.strategies import encoded, json_values, mutated

T = TypeVar("T")
ACCOUNTS = ("700001", "700002", "710001")
ENDPOINTS = [  # method, path with {a} the account and {s} a second segment
    ("PUT", "/api/v1/accounts/{a}"),
    ("POST", "/api/v1/accounts/{a}/contacts"),
    ("PATCH", "/api/v1/accounts/{a}/contacts/{s}"),
    ("PUT", "/api/v1/accounts/{a}/zones/{s}"),
    ("PUT", "/api/v1/accounts/{a}/users/{s}"),
    ("PUT", "/api/v1/accounts/{a}/call-lists/{s}"),
    ("PUT", "/api/v1/accounts/{a}/schedule"),
    ("PUT", "/api/v1/holidays/{s}"),
    ("PUT", "/api/v1/accounts/{a}/holidays/{s}"),
    ("POST", "/api/v1/accounts/{a}/test"),
]
MEMBERS = [
    "name", "street", "city", "state", "phone", "agencies", "permit", "test_interval",
    "duress_code", "account", "has_duress_code", "phones", "email", "relation", "notes",
    "passcode", "lists", "description", "equipment", "contacts", "days", "open", "close",
    "timezone", "grace_min", "windows", "minutes", "zones", "types", "by", "reason",
]  # fmt: skip
PROBLEMS = {403: "API-SCOPE", 404: "API-NOTFOUND", 409: "API-CONFLICT", 412: "API-ETAG",
            413: "API-INPUT", 422: "API-INPUT"}  # fmt: skip
MAX_BODY = 16_384

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=24)
segments = st.one_of(
    st.sampled_from(["1", "2", "001", "PRIMARY", "2031-12-25", "2031-02-30", "0", "-1"]),
    st.integers(0, 2**70).map(str),
    text.filter(lambda t: "/" not in t and t not in ("", ".", "..")),
)
objects = st.dictionaries(st.sampled_from(MEMBERS) | st.text(max_size=6), json_values, max_size=5)
numbers = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.none()
typed = {  # members with values of their own type, so that bodies get past the type checks
    **{name: text | st.none() for name in MEMBERS},
    "phones": st.lists(st.fixed_dictionaries({"number": text}, optional={"kind": text}),
                       max_size=3),
    "agencies": st.dictionaries(st.sampled_from(["police", "fire", "medical"]), text | st.none()),
    "contacts": st.lists(st.integers(-5, 2**70), max_size=3),
    "lists": st.lists(text, max_size=3),
    "zones": st.lists(text, max_size=3),
    "types": st.lists(text, max_size=3),
    "windows": st.lists(json_values, max_size=3),
    "days": st.lists(text, max_size=3) | text,
    "test_interval": numbers,
    "grace_min": numbers,
    "minutes": numbers,
    "has_duress_code": st.booleans(),
}  # fmt: skip
well_typed = st.lists(st.sampled_from(MEMBERS), max_size=4, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({name: typed[name] for name in names})
)
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.flatmap(encoded),
    objects.flatmap(encoded),
    objects.flatmap(encoded).flatmap(mutated),
    well_typed.flatmap(encoded),
)


class Writer:
    """The node's writer as the API uses it: each change in a transaction of its own."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    async def run(self, work: Callable[[Connection], T]) -> T:
        with write_transaction(self.engine) as conn:
            return work(conn)


def documented(status: int, body: bytes) -> bool:
    """A success with a JSON object (nothing for 204), or the problem of its status."""
    if status == 204:
        return body == b""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    if status in (200, 201):
        return isinstance(value, dict) and "code" not in value
    if status not in PROBLEMS or not isinstance(value, dict):
        return False
    return (value.get("status"), value.get("code")) == (status, PROBLEMS[status])


def test_api_bodies_answer_only_documented_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter("API JSON")
    monkeypatch.setattr(response_store, "HASHER", PasswordHasher(1, 8, 1))
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as directory:
        settings = settings_module.load(Path(directory))
        engine = open_engine(settings.database)
        upgrade(engine)
        provisioning.upsert_accounts(engine, (Account(a, f"Fuzz {a}") for a in ACCOUNTS))
        with write_transaction(engine) as conn:
            keys = [
                api_keys.create(conn, "all", SCOPES, "", now_us()),
                api_keys.create(conn, "dealer", SCOPES, "7000", now_us()),
            ]
        app = Starlette(
            routes=routes(engine, Writer(engine), MAX_BODY, StreamBudget(settings)),  # type: ignore[arg-type]
            exception_handlers={HTTPException: _http_error},  # the node's: 404 as a problem
        )

        @FUZZ
        @given(
            endpoint=st.sampled_from(ENDPOINTS),
            account=st.sampled_from(ACCOUNTS) | segments,
            segment=segments,
            body=bodies,
            key=st.sampled_from(keys),
        )
        def one(
            endpoint: tuple[str, str], account: str, segment: str, body: bytes, key: str
        ) -> None:
            counter.runs += 1
            method, template = endpoint
            path = template.format(a=account, s=segment)
            headers = [(b"authorization", f"Bearer {key}".encode()),
                       (b"content-type", b"application/json")]  # fmt: skip
            status, answer = call(loop, app, path, headers, body, method=method)
            assert documented(status, answer), (
                status, path, body, answer[:300],
            )  # fmt: skip

        one()
    loop.close()
    engine.dispose()
    counter.check()
