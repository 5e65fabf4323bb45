"""Fuzz the query interface's route in-process: multipart and URL-encoded forms (well formed,
mutated and raw bytes), content types and query strings, through Starlette's form parsing
(python-multipart) and the methods' field checks on a real SQLite database. Authentication is
a stand-in that lets every request through, so every input reaches the form parser (the
digests and nonces have their own tests). Every answer must be a 200 JSON object or a
documented error body (decisions sections 3 and 6)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import orjson
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette

from alarmhub import settings as settings_module
from alarmhub.store.engine import open_engine, upgrade
from alarmhub.xm import errors
from alarmhub.xm.routes import PATH, routes
from tests.fuzz.common import FUZZ, Counter, call
from tests.fuzz.strategies import latin1, mutated

NAMES = [
    "*setMethod", "ACCOUNT", "HOURS", "STARTDATE", "STARTTIME", "STOPDATE", "STOPTIME",
    "LIMITHIST", "SEARCHTYPE", "SERVICEONLY", "NOMULTIPLES", "ARRAY", "SOURCE",
    "FIXED_HISTORY_TAG",
]  # fmt: skip
VALUES = [
    "XMHIST", "XMAPEND", "XMAINPRO", "xmhist", "700042", "D1", "24", "0", "-1", "03252024",
    "13/45/2024", "0000", "2359", "10", "99999999999999999999", "OPR", "Y", "N", "DATAENTRY", "",
]  # fmt: skip
QUERY = b"dataSource=methods&*view=xmsubmit"
BOUNDARY = "fuzzboundary7MA4YWxkTrZu0gW"
INVALID_METHOD_KEYS = set(errors.invalid_method(""))


class Auth:
    """Lets every request through (the form is what is fuzzed here)."""

    presented = SimpleNamespace(form_signed=True, user=SimpleNamespace(username="fuzz"))

    async def examine(self, headers: Any) -> Any:
        return self.presented

    def signed(self, presented: Any, form: Any) -> Any:
        return presented.user

    async def claim(self, headers: Any) -> bool:
        return True


def multipart(fields: list[tuple[str, str]], boundary: str = BOUNDARY) -> bytes:
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields
    ]
    return ("".join(parts) + f"--{boundary}--\r\n").encode("utf-8", "surrogatepass")


names = st.sampled_from(NAMES) | st.text(max_size=12)
values = st.sampled_from(VALUES) | st.text(max_size=24)
forms = st.lists(st.tuples(names, values), max_size=10)
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
URLENCODED = "application/x-www-form-urlencoded"
requests = st.one_of(
    st.tuples(st.just(MULTIPART), forms.map(multipart)),
    st.tuples(st.just(MULTIPART), forms.map(multipart).flatmap(mutated)),
    st.tuples(
        st.just(URLENCODED),
        forms.map(lambda f: urlencode(f, encoding="utf-8", errors="surrogatepass").encode()),
    ),
    st.tuples(
        st.sampled_from([MULTIPART, URLENCODED, "multipart/form-data", "text/plain", ""])
        | latin1.map(lambda t: f"multipart/form-data; boundary={t}"),
        st.binary(max_size=400),
    ),
)


def documented(status: int, body: dict[str, Any]) -> bool:
    if status == 200:
        return isinstance(body, dict) and "TOTAL_RECORDS" in body
    if status == 413:
        return body == errors.TOO_LARGE
    if status != 400:
        return False
    if set(body) == INVALID_METHOD_KEYS:
        return body["ERROR_CODE"] == "999"
    if body == errors.MALFORMED:
        return True
    return (
        set(body) == {"status", "message", "errno"}
        and body["errno"] == 3
        and body["message"].endswith(" is invalid")
    )


def test_query_forms_answer_only_documented_bodies() -> None:
    counter = Counter("query form")
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as directory:
        settings = settings_module.load(Path(directory), rest_max_body_bytes=2048)
        engine = open_engine(settings.database)
        upgrade(engine)
        auth: Any = Auth()
        app = Starlette(
            routes=routes(
                auth,
                engine,
                settings.zone,
                settings.rest_max_body_bytes,
                settings.xmhist_max_records,
            )
        )

        @FUZZ
        @given(request=requests, query=st.just(QUERY) | st.binary(max_size=40))
        def one(request: tuple[str, bytes], query: bytes) -> None:
            counter.runs += 1
            content_type, body = request
            headers = [(b"content-type", content_type.encode("latin-1"))]
            status, answer = call(loop, app, PATH, headers, body, query)
            assert documented(status, orjson.loads(answer)), (status, answer)

        try:
            one()
        finally:
            loop.close()
            engine.dispose()
    counter.check()
