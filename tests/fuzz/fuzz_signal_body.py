"""Fuzz the signaling interface's ``contact_id`` route in-process: body, path, token and
Idempotency-Key. Every answer must be the success envelope or one of the documented refusals
(``core/errors.py``), with the HTTP status equal to its ``status_code``; every signal handed to
the writer must be valid."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette

from alarmhub.contactid import EVENTS
from alarmhub.core import errors
from alarmhub.core.signal import Signal
from alarmhub.core.tokens import Grant
from alarmhub.rx.routes import SUCCESS, routes
from alarmhub.store.commit import CONFLICT, Stored
from tests.fuzz.common import FUZZ, Counter, call
from tests.fuzz.strategies import encoded, json_values, latin1, mutated

TOKEN = "Bearer T"
GRANT = Grant("fuzz", drivers=frozenset({"rx1"}))
FIELDS = ["dnis", "panel", "code", "area", "zone_or_user"]
LIKELY = ["1234", "0042", "E130", "e602", "R401", "E999", "1", "15", "015", "", "0", "00000"]
# status -> the (error_code, message) of every documented refusal with that status
DOCUMENTED: dict[int, set[tuple[str, str]]] = {}
for refusal in errors.ALL:
    DOCUMENTED.setdefault(refusal.status_code, set()).add((refusal.error_code, refusal.message))


class Grants:
    drivers = frozenset({"rx1"})

    def cached(self, authorization: str | None) -> Grant | None:
        return GRANT if authorization == TOKEN else None

    async def authenticate(self, authorization: str | None) -> Grant | None:
        return self.cached(authorization)


class Writer:
    """Checks every signal it is given, as the writer would store it."""

    async def submit(self, sig: Signal) -> Stored:
        assert 0 < len(sig.source) <= 64 and 0 < len(sig.destination) <= 64
        assert not any(ord(c) < 32 or ord(c) == 127 for c in sig.source + sig.destination)
        f = sig.fields
        assert f.dnis.isascii() and f.dnis.isalnum() and len(f.dnis) <= 5
        assert f.panel.isascii() and f.panel.isalnum() and len(f.panel) <= 10
        assert f.code[0] in "ER" and f.code[1:] in EVENTS
        assert len(f.area) == 2 and f.area.isdigit() and len(f.zone) == 3 and f.zone.isdigit()
        return CONFLICT if sig.idempotency_key == "conflict" else Stored(1)


grants: Any = Grants()
APP = Starlette(routes=routes(grants, Writer(), SimpleNamespace(beat=lambda *a: None), 16384))

field_values = st.sampled_from(LIKELY) | json_values
field_names = st.sampled_from(FIELDS) | st.text(max_size=6)
bodies = st.one_of(
    st.binary(max_size=300),
    st.dictionaries(field_names, field_values, max_size=7).flatmap(encoded),
    st.fixed_dictionaries({f: st.sampled_from(LIKELY) for f in FIELDS})
    .flatmap(encoded)
    .flatmap(mutated),
    json_values.flatmap(encoded),
)
# what a path segment can hold once the server has decoded it: any character but "/"
segment = st.characters(blacklist_categories=("Cs",), blacklist_characters="/")
pairs = st.builds(
    lambda source, destination: f"{source}:{destination}",
    st.text(segment, max_size=70),
    st.sampled_from(["rx1", "rx2", ""]) | st.text(segment, max_size=66),
).filter(bool)


def test_the_signal_body_and_path_answer_only_documented_envelopes() -> None:
    counter = Counter("signal body")
    loop = asyncio.new_event_loop()

    @FUZZ
    @given(
        body=bodies,
        pair=pairs,
        token=st.sampled_from([TOKEN, "Bearer X", "", "bearer T", "Basic T"]),
        key=st.none() | st.just("conflict") | latin1,
        declared=st.none() | st.integers(0, 40000),
    )
    def one(body: bytes, pair: str, token: str, key: str | None, declared: int | None) -> None:
        counter.runs += 1
        headers = [(b"authorization", token.encode("latin-1"))]
        if key is not None:
            headers.append((b"idempotency-key", key.encode("latin-1")))
        if declared is not None:
            headers.append((b"content-length", str(declared).encode()))
        status, answer = call(loop, APP, f"/rx/{pair}/contact_id", headers, body)
        if status == 200:
            assert answer == SUCCESS
            return
        envelope = orjson.loads(answer)
        assert envelope["status_code"] == status and envelope["status"] == "error"
        assert (envelope["error_code"], envelope["message"]) in DOCUMENTED[status], envelope
        assert set(envelope) == {"status_code", "status", "error_code", "message"}

    try:
        one()
    finally:
        loop.close()
    counter.check()
