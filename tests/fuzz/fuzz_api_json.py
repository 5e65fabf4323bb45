"""Fuzz the integrator API's JSON bodies in-process: every route of ``/api/v1`` that takes a body
(found in the routes themselves, so a new one is fuzzed too), its path filled with accounts
that exist and other segments, bodies of every shape around each route's members (raw bytes,
JSON values, objects with the real member names, mutated, around the body limit), true and
false Content-Lengths and If-Match headers, through the real key check, handlers and store on
a SQLite database (writes in-process instead of the node's writer). Every answer must be a
success (200, 201 or 204, JSON) or problem details of ``api/problems.py`` whose status is its
code's (decisions section 10)."""

from __future__ import annotations

import asyncio
import collections
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Connection
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Mount, Route

from alarmhub import api
from alarmhub.api.accounts import ACCOUNT_MEMBERS
from alarmhub.api.problems import INPUT, STATUS
from alarmhub.api.response_data import CONTACT_MEMBERS
from alarmhub.api.supervision import HOLIDAY_FIELDS, START_FIELDS
from alarmhub.app import _http_error as http_error
from alarmhub.clock import now_us
from alarmhub.core.account import Account
from alarmhub.core.api_keys import SCOPES
from alarmhub.store import api_keys, operations, provisioning
from alarmhub.store.engine import open_engine, upgrade
from alarmhub.store.schedule_data import SET_FIELDS
from tests.fuzz.common import FUZZ, Counter, call
from tests.fuzz.strategies import encoded, json_values, mutated

MAX_BODY = 16_384
ACCOUNTS = ["700001", "700002", "7000A"]
MEMBERS = sorted(
    {*ACCOUNT_MEMBERS, *CONTACT_MEMBERS, *HOLIDAY_FIELDS, *START_FIELDS, *SET_FIELDS}
    | {"description", "equipment", "name", "contacts", "number", "kind", "order", "list"}
)
SEGMENTS: dict[str, list[str]] = {
    "account": [*ACCOUNTS, "799999", "ab1", "%00", "7" * 40],
    "zone": ["001", "999", "1000", "0", "x", ""],
    "user": ["001", "12", "abc", "-1"],
    "id": ["1", "2", "0", str(2**63 - 1)],  # within 64 bits
    "name": ["PRIMARY", "NIGHT", "a b", "X" * 40],
    "date": ["2026-12-25", "2026-02-30", "25/12/2026", "2026-1-1", "9999-12-31"],
}
PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
SUCCESS = {200, 201, 204}


class InlineWriter:
    """The node's writer in this process: each write one transaction (``operations.run``)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    async def run(self, work: Any) -> Any:
        return await asyncio.to_thread(operations.run, self.engine, work)


def body_routes(app_routes: list[Any]) -> list[tuple[str, str]]:
    """(method, path template) of every route under the mount that takes a body."""
    found = []
    for mount in app_routes:
        assert isinstance(mount, Mount)
        for route in mount.routes:
            if isinstance(route, Route) and "{rest:path}" not in route.path:
                for method in sorted((route.methods or set()) & {"POST", "PUT", "PATCH"}):
                    found.append((method, mount.path + route.path))
    assert found
    return found


@st.composite
def paths(draw: st.DrawFn, template: str) -> str:
    def segment(match: re.Match[str]) -> str:
        known = SEGMENTS.get(match.group(1), ["1"])
        return draw(st.sampled_from(known) | st.text(max_size=12).map(_path_safe))

    return PARAM.sub(segment, template)


def _path_safe(text: str) -> str:
    return "".join(c for c in text if c not in "/?#") or "x"


TYPES: dict[str, Any] = {
    **ACCOUNT_MEMBERS,
    **CONTACT_MEMBERS,
    **HOLIDAY_FIELDS,
    **START_FIELDS,
    **SET_FIELDS,
}
WORDS = ["700001", "001", "PRIMARY", "1234", "2026-12-25", "", "mobile", "08:00", "mon"]
texts = st.sampled_from(WORDS) | st.text(max_size=12)
by_type: dict[Any, Any] = {
    str: texts,
    int: st.integers(-5, 2000) | st.integers(),
    bool: st.booleans(),
    list: st.lists(texts | json_values, max_size=4),
    dict: st.dictionaries(texts, texts | json_values, max_size=4),
}


def typed_value(kind: Any) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return st.one_of(*[by_type.get(k, json_values) for k in kinds])


typed_members = st.lists(st.sampled_from(sorted(TYPES)), max_size=8, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: typed_value(TYPES[n]) for n in names})
)
members = st.dictionaries(
    st.sampled_from(MEMBERS) | st.text(max_size=6),
    json_values | st.sampled_from(["700001", "001", "PRIMARY", "1234", "2026-12-25", ""]),
    max_size=6,
)
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.flatmap(encoded),
    members.flatmap(encoded),
    members.flatmap(encoded).flatmap(mutated),
    typed_members.flatmap(encoded),
    typed_members.flatmap(encoded),
    st.tuples(st.integers(MAX_BODY - 20, MAX_BODY + 20), members.flatmap(encoded)).map(
        lambda n_raw: n_raw[1] + b" " * n_raw[0]  # around the body limit
    ),
)


def documented(status: int, answer: bytes) -> bool:
    value = orjson.loads(answer) if answer else None
    if status in SUCCESS:
        return status == 204 or isinstance(value, dict | list)
    if not isinstance(value, dict) or value.get("status") != status:
        return False
    code = value.get("code")
    return code in STATUS and (status == STATUS[code] or (code == INPUT and status == 413))


def provision(conn: Connection) -> str:
    return api_keys.create(conn, "fuzz", SCOPES, "", now_us())


def test_api_bodies_answer_only_documented_statuses() -> None:
    counter = Counter("API JSON")
    statuses: collections.Counter[int] = collections.Counter()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as directory:
        engine = open_engine(f"sqlite:///{Path(directory) / 'fuzz.db'}")
        upgrade(engine)
        provisioning.upsert_accounts(engine, [Account(a, f"Site {a}") for a in ACCOUNTS])
        key = operations.run(engine, provision)
        app_routes = api.routes(engine, InlineWriter(engine), MAX_BODY)  # type: ignore[arg-type]
        # the node's answer to what no route takes (a path with a newline: %0A)
        app = Starlette(routes=app_routes, exception_handlers={HTTPException: http_error})
        templates = body_routes(app_routes)

        @FUZZ
        @given(
            route=st.sampled_from(templates).flatmap(
                lambda r: st.tuples(st.just(r[0]), paths(r[1]))
            ),
            body=bodies,
            length=st.sampled_from(["true", "none", "false", "huge"]),
            if_match=st.none() | st.sampled_from(['"x"', "*", 'W/"0"', ""]),
            json_type=st.booleans(),
        )
        def one(
            route: tuple[str, str],
            body: bytes,
            length: str,
            if_match: str | None,
            json_type: bool,
        ) -> None:
            counter.runs += 1
            method, path = route
            headers = [(b"authorization", f"Bearer {key}".encode())]
            if json_type:
                headers.append((b"content-type", b"application/json"))
            declared = {"true": str(len(body)), "false": "3", "huge": "99999999999999999999"}
            if length in declared:
                headers.append((b"content-length", declared[length].encode()))
            if if_match is not None:
                headers.append((b"if-match", if_match.encode()))
            status, answer = call(loop, app, path, headers, body, method=method)
            assert documented(status, answer), (method, path, status, answer[:300])
            statuses[status] += 1

        try:
            one()
        finally:
            loop.close()
            engine.dispose()
    print(f"API JSON answers: {dict(sorted(statuses.items()))}")
    counter.check()
