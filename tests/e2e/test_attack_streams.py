"""Hostile event streams (issue 35, items 3 and 4) against a real ``alarmhub serve``, on SQLite
and PostgreSQL: more streams of one key, and from one address, than the caps allow (``429
API-STREAMS``); streams beyond the listener's connection cap while ``/rx`` heartbeats are still
answered (streams have a budget of their own); a revoked key's stream and a disabled operator's
console feed ending while events flow without a pause.

Each test here failed on the code before this work: streams had no cap, took the listener's
connection slots, and a stream's key or session was checked again only after 15 s with nothing
sent, which never comes on a busy station.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from types import TracebackType

import httpx
import pytest

from alarmhub.node.listener_limits import STREAM_CHECK_SECONDS
from tests.support.console_client import SUCCESS, read_events
from tests.support.console_station import Hub, provision_console, served
from tests.support.event_stream import EventReader
from tests.support.processes import cli, cli_json, wait_for

pytestmark = pytest.mark.backends("sqlite", "postgresql")

PER_KEY = 4  # the default of stream_max_per_key
PER_ADDRESS = 6
MAX_CONNECTIONS = 8
ENDS_WITHIN = 6 * STREAM_CHECK_SECONDS  # far above the bound: a loaded machine is slow
_accounts = itertools.count()


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir = tmp_path_factory.mktemp("streams") / "station"
    token, engine = provision_console(data_dir)
    env = {
        "ALARMHUB_STREAM_MAX_PER_ADDRESS": str(PER_ADDRESS),
        "ALARMHUB_HTTP_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    }
    with served(data_dir, token, engine, env=env) as served_hub:
        yield served_hub


def make_key(hub: Hub, name: str) -> str:
    created = cli_json(hub.station.data_dir, "apikey", "create", "--name", name,
                       "--scope", "events:read")  # fmt: skip
    assert isinstance(created, dict)
    return str(created["key"])


def refused_429(reader: EventReader) -> str:
    assert reader.open() == 429
    assert reader.refusal is not None
    assert reader.refusal.headers["content-type"] == "application/problem+json"
    problem = reader.refusal.json()
    assert (problem["status"], problem["code"]) == (429, "API-STREAMS"), problem
    return str(problem["detail"])


class Flow:
    """``with Flow(hub):`` a new alarm about every 0.6 s, each on another account (never ten
    of one account in two minutes: no runaway), until the block ends."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Flow:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.hub.url, timeout=30) as client:
            while not self._stop.wait(0.6):
                n = next(_accounts)
                body = {"dnis": "C1", "panel": f"{n % 30 + 1}", "code": "E130",
                        "zone_or_user": f"{n // 30 % 900 + 100}"}  # fmt: skip
                answer = client.post(
                    "/rx/site1:rx1/contact_id",
                    json=body,
                    headers={"Authorization": f"Bearer {self.hub.station.token}"},
                )
                assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text
                self.sent += 1


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_streams_are_capped_per_key_and_per_address(hub: Hub) -> None:
    first, second = make_key(hub, "greedy"), make_key(hub, "neighbour")
    greedy = [EventReader(hub.url, first).__enter__() for _ in range(PER_KEY)]
    neighbour: list[EventReader] = []
    try:
        assert "this key has 4 event streams" in refused_429(EventReader(hub.url, first))
        elsewhere = EventReader(hub.url, first, address="127.0.0.2")
        assert "this key" in refused_429(elsewhere), "the key's cap holds from any address"
        for _ in range(PER_ADDRESS - PER_KEY):
            neighbour.append(EventReader(hub.url, second).__enter__())
        assert "this address has 6" in refused_429(EventReader(hub.url, second))
        with EventReader(hub.url, second, address="127.0.0.2"):
            pass  # another address has room
        greedy.pop().disconnect()  # a stream that ends gives its slot back

        def reopened() -> EventReader | None:
            reader = EventReader(hub.url, first)
            return reader if reader.open() == 200 else None

        greedy.append(wait_for(reopened, "the freed slot", 30))
    finally:
        for reader in greedy + neighbour:
            reader.disconnect()


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_heartbeats_are_answered_while_streams_hold_more_than_the_connection_cap(
    hub: Hub,
) -> None:
    keys = [make_key(hub, f"crowd-{n}") for n in range(3)]
    streams = [
        EventReader(hub.url, key, address=f"127.0.1.{n}").__enter__()
        for n, key in enumerate(keys)
        for _ in range(PER_KEY)
    ]
    try:
        assert len(streams) > MAX_CONNECTIONS
        headers = {"Authorization": f"Bearer {hub.station.token}"}
        for _ in range(3):  # each on a new connection
            answer = httpx.get(f"{hub.url}/rx/site1:rx1/hb", headers=headers, timeout=10)
            assert answer.status_code == 200, answer.text
        assert httpx.get(f"{hub.url}/console/login", timeout=10).status_code == 200
    finally:
        for reader in streams:
            reader.disconnect()


def test_a_revoked_keys_stream_ends_while_events_flow(hub: Hub) -> None:
    key = make_key(hub, "revoked-soon")
    with Flow(hub) as flow, EventReader(hub.url, key) as reader:
        reader.wait_for(2, "events flowing")
        cli(hub.station.data_dir, "apikey", "revoke", "revoked-soon")
        revoked_at = flow.sent
        wait_for(lambda: reader.ended, "the revoked key's stream to end", ENDS_WITHIN)
        assert flow.sent > revoked_at, "events went on flowing meanwhile"
    with EventReader(hub.url, make_key(hub, "after")) as other:
        assert not other.ended, "a valid key streams as before"


def test_a_disabled_operators_feed_ends_while_events_flow(hub: Hub) -> None:
    console = hub.console().sign_in("OP3")
    names: list[str] = []
    with Flow(hub) as flow, console.client.stream("GET", "/console/events") as stream:
        assert stream.status_code == 200
        events = read_events(stream.iter_lines())
        assert next(events)[0] == "snapshot"
        cli(hub.station.data_dir, "operator", "disable", "OP3")
        disabled_at, deadline = flow.sent, time.monotonic() + ENDS_WITHIN
        for name, _ in events:  # to the end of the stream, or the deadline
            names.append(name)
            if time.monotonic() > deadline:
                break
        assert flow.sent > disabled_at, "events went on flowing meanwhile"
    assert names[-1] == "signed-out", names[-5:]
    assert "snapshot" in names, "snapshots flowed until the feed ended"
