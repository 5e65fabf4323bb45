"""Attacks on the signaling interface: a reused Idempotency-Key must not swallow a different
signal, one bad signal must not fail its neighbours, unknown tokens must not each cost a query.

(A DC-09 frame that reuses a sequence number with other content is a new event:
``tests/test_dc09_e2e.py::test_retransmission_is_acked_again_but_stored_once``.)
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from alarmhub import settings as settings_module
from alarmhub.core import errors
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.rx.auth import GrantCache
from alarmhub.store import provisioning
from alarmhub.store.commit import Stored
from alarmhub.store.engine import open_engine, upgrade
from alarmhub.store.writer import SignalWriter
from tests.support.database import database_url, db_rows
from tests.support.processes import Station

# the database matters to these attacks: they run on SQLite and on PostgreSQL
pytestmark = pytest.mark.backends("sqlite", "postgresql")

FIRE = {"dnis": "1234", "panel": "0042", "code": "E110", "area": "1", "zone_or_user": "15"}
BURGLARY = {**FIRE, "code": "E130"}


def envelope(refusal: errors.SignalRefusal) -> dict[str, Any]:
    return {
        "status_code": refusal.status_code,
        "status": "error",
        "error_code": refusal.error_code,
        "message": refusal.message,
    }


def stored_codes(station: Station, source: str) -> list[str]:
    rows = db_rows(station.data_dir, "SELECT code FROM signal WHERE source = ?", source)
    return sorted(str(row["code"]) for row in rows)


def test_a_different_signal_under_a_used_key_is_refused_and_nothing_stored(
    station: Station,
) -> None:
    key = {"Idempotency-Key": uuid.uuid4().hex}
    source = f"idem-{uuid.uuid4().hex[:8]}"
    pair = f"{source}:rx1"
    assert station.post(BURGLARY, pair=pair, headers=key).status_code == 200
    # the burglary's key reused for a fire alarm: refused, never a silent 200
    fire = station.post(FIRE, pair=pair, headers=key)
    assert fire.status_code == 422
    assert fire.json() == envelope(errors.IDEMPOTENCY_CONFLICT)
    assert fire.json()["message"] == "Idempotency-Key was used for a different signal"
    # the same signal under another path is a different signal too
    elsewhere = station.post(BURGLARY, pair=f"{source}-b:rx1", headers=key)
    assert elsewhere.json()["error_code"] == "IDEMPOTENCY-2"
    # a true retry still gets the first answer
    assert station.post(BURGLARY, pair=pair, headers=key).status_code == 200
    assert stored_codes(station, source) == ["E130"]
    assert stored_codes(station, f"{source}-b") == []


def test_a_retry_is_compared_after_defaults_and_padding(station: Station) -> None:
    key = {"Idempotency-Key": uuid.uuid4().hex}
    source = f"pad-{uuid.uuid4().hex[:8]}"
    padded = {**BURGLARY, "area": "01", "zone_or_user": "015", "code": "e130", "extra": 1}
    assert station.post(BURGLARY, pair=f"{source}:rx1", headers=key).status_code == 200
    assert station.post(padded, pair=f"{source}:rx1", headers=key).status_code == 200
    assert stored_codes(station, source) == ["E130"]


def test_different_signals_racing_under_one_key_store_exactly_one(station: Station) -> None:
    """Twenty requests at once under one key, two different signals: one is stored; every
    request that sent it gets 200, every other one IDEMPOTENCY-2 (in one group commit or
    several)."""
    key = {"Idempotency-Key": uuid.uuid4().hex}
    source = f"race-{uuid.uuid4().hex[:8]}"
    answers: dict[int, tuple[str, int, str]] = {}
    start = threading.Barrier(20)

    def send(i: int) -> None:
        body = FIRE if i % 2 else BURGLARY
        start.wait()
        response = station.post(body, pair=f"{source}:rx1", headers=key)
        answers[i] = (body["code"], response.status_code, response.text)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [kept] = stored_codes(station, source)
    for code, status, text in answers.values():
        if code == kept:
            assert status == 200, text
        else:
            assert status == 422 and "IDEMPOTENCY-2" in text, text


@pytest.mark.parametrize(
    "pair",
    ["bad%00source:rx1", "bad%0Asource:rx1", "bad%7Fsource:rx1", "src:rx1%00", "s" * 65 + ":rx1"],
)
@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_control_character_in_the_path_is_refused_before_the_writer(
    station: Station, pair: str
) -> None:
    before = len(db_rows(station.data_dir, "SELECT incident_number FROM signal"))
    response = station.post(BURGLARY, pair=pair)
    assert response.status_code == 422
    assert response.json() == envelope(errors.BUFFER_REFUSED)
    assert len(db_rows(station.data_dir, "SELECT incident_number FROM signal")) == before


def test_a_poison_signal_never_fails_eight_good_senders(station: Station) -> None:
    """Eight integrators send good signals while another sends a NUL in its source (which
    PostgreSQL cannot store, and once failed the whole group commit): no good signal gets
    anything but 200."""
    source = f"good-{uuid.uuid4().hex[:8]}"
    bad: list[int] = []
    good: list[tuple[int, str]] = []
    stop = threading.Event()

    def sender(n: int) -> None:
        with httpx.Client(timeout=10) as client:
            for i in range(25):
                response = client.post(
                    f"{station.url}/rx/{source}-{n}:rx1/contact_id",
                    json={**BURGLARY, "zone_or_user": str(i)},
                    headers={"Authorization": f"Bearer {station.token}"},
                )
                good.append((response.status_code, response.text))

    def poisoner() -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                response = client.post(
                    f"{station.url}/rx/nul%00{source}:rx1/contact_id",
                    json=BURGLARY,
                    headers={"Authorization": f"Bearer {station.token}"},
                )
                bad.append(response.status_code)

    poisoners = [threading.Thread(target=poisoner) for _ in range(2)]
    senders = [threading.Thread(target=sender, args=(n,)) for n in range(8)]
    for thread in poisoners + senders:
        thread.start()
    for thread in senders:
        thread.join()
    stop.set()
    for thread in poisoners:
        thread.join()
    assert len(good) == 200
    assert [text for status, text in good if status != 200] == []
    assert bad and set(bad) == {422}
    stored = db_rows(
        station.data_dir, "SELECT count(*) AS n FROM signal WHERE source LIKE ?", "%good%"
    )
    assert stored[0]["n"] >= 200


# the writer itself -------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path) -> Iterator[str]:
    url = database_url(tmp_path)
    engine = open_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url


def _signal(source: Any, zone: str) -> Signal:
    return Signal(source, "rx1", SignalFields("1234", "0042", "E130", "01", zone), "t", 1, None)


def test_the_writer_stores_the_neighbours_of_a_signal_the_database_refuses(
    database: str, tmp_path: Path
) -> None:
    """Six signals in one group commit, one of which the database refuses (NOT NULL): the five
    others are stored and answered; only the bad one fails."""

    async def scenario() -> list[Stored | BaseException]:
        engine = open_engine(database)
        writer = SignalWriter(engine, settings_module.load(tmp_path, database_url=database))
        await writer.start()
        try:
            futures = [
                writer.enqueue(_signal(None if i == 3 else f"s{i}", f"{i:03}")) for i in range(6)
            ]
            return await asyncio.gather(*futures, return_exceptions=True)
        finally:
            await writer.stop()
            engine.dispose()

    outcome = asyncio.run(scenario())
    assert isinstance(outcome[3], StoreUnavailable)
    good = [x for i, x in enumerate(outcome) if i != 3]
    assert all(isinstance(x, Stored) and not x.duplicate for x in good), outcome
    engine = open_engine(database)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT source FROM signal ORDER BY incident_number")
            assert [r[0] for r in rows] == ["s0", "s1", "s2", "s4", "s5"]
    finally:
        engine.dispose()


def test_unknown_tokens_share_one_check_and_a_new_token_works_at_once(database: str) -> None:
    """Three hundred requests with random unknown tokens cost a query or two, not three
    hundred; the same tokens again cost none; a token created meanwhile works on its first
    request."""
    engine = open_engine(database)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    provisioning.add_driver(engine, "rx1")
    cache = GrantCache(engine)
    cache.load()

    async def scenario() -> None:
        tokens = [f"Bearer {secrets.token_urlsafe(32)}" for _ in range(300)]
        statements.clear()
        grants = await asyncio.gather(*(cache.authenticate(t) for t in tokens))
        assert grants == [None] * 300
        assert len(statements) <= 4, statements
        statements.clear()
        assert await asyncio.gather(*(cache.authenticate(t) for t in tokens)) == [None] * 300
        assert statements == []
        fresh = await asyncio.to_thread(provisioning.create_token, engine, "new", ["rx1"])
        grant = await cache.authenticate(f"Bearer {fresh}")
        assert grant is not None and grant.name == "new"

    try:
        asyncio.run(scenario())
    finally:
        engine.dispose()
