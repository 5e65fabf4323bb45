"""The event stream ``GET /api/v1/events`` of a real ``alarmhub serve``, on SQLite and
PostgreSQL: signals posted, alarms taken and resolved through the console arrive in order, each
with its id, kind and body; a client that disconnects and comes back with ``Last-Event-ID``
misses nothing and gets nothing twice; a key limited to an account range hears only of its
accounts; refusals are problem details; the node stops promptly with streams open.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from sqlalchemy import delete, update

from alarmhub.core.events import (
    ALARM_RAISED,
    ALARM_RESOLVED,
    ALARM_RESTORED,
    ALARM_TAKEN,
    event_id_of,
    event_id_text,
)
from alarmhub.store import events
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from tests.support.console_station import Hub, provision_console, served
from tests.support.event_stream import EventReader, Received
from tests.support.processes import cli, cli_json, wait_for

pytestmark = pytest.mark.backends("sqlite", "postgresql")


def make_key(data_dir: Path, name: str, *args: str) -> str:
    created = cli_json(data_dir, "apikey", "create", "--name", name, *args)
    assert isinstance(created, dict)
    return str(created["key"])


class Station:
    """A served station with keys: ``every`` (events:read), ``dealer`` (events:read, accounts
    70000x) and ``reader`` (alarms:read only)."""

    def __init__(self, hub: Hub, data_dir: Path) -> None:
        self.hub = hub
        self.data_dir = data_dir
        self.every = make_key(data_dir, "every", "--scope", "events:read")
        self.dealer = make_key(data_dir, "dealer", "--scope", "events:read", "--accounts", "70000")
        self.reader = make_key(data_dir, "reader", "--scope", "alarms:read")

    def reader_of(self, key: str, last_event_id: str | None = None) -> EventReader:
        return EventReader(self.hub.url, key, last_event_id)

    def outbox_after(self, event_id: int) -> list[events.Event]:
        with self.hub.engine.connect() as conn:
            return events.after(conn, event_id, 10_000)


@pytest.fixture(scope="module")
def station(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Station]:
    data_dir = tmp_path_factory.mktemp("events") / "station"
    token, engine = provision_console(data_dir)
    with served(data_dir, token, engine) as hub:
        yield Station(hub, data_dir)


def body_of(received: Received) -> dict[str, object]:
    assert isinstance(received.data, dict)
    return received.data


def alarm_of(received: Received) -> object:
    data = body_of(received)["data"]
    assert isinstance(data, dict)
    return data["alarm_id"]


def test_events_in_order_then_resumed_after_a_disconnect(station: Station) -> None:
    hub = station.hub
    console = hub.console().sign_in("OP1")
    console.ok("/receiving", {"receiving": False})
    with station.reader_of(station.every) as first:
        hub.signal(1, "E130", 1)
        alarm_id = hub.alarm_of(1, 1)["alarm_id"]
        console.ok(f"/alarms/{alarm_id}/take")
        console.ok(f"/alarms/{alarm_id}/resolve", {"resolution": "FA"})
        got = first.wait_for(3, "raised, taken, resolved")
    assert [(e.kind, alarm_of(e)) for e in got] == [
        (ALARM_RAISED, alarm_id),
        (ALARM_TAKEN, alarm_id),
        (ALARM_RESOLVED, alarm_id),
    ]
    raised = body_of(got[0])
    assert raised["type"] == ALARM_RAISED and isinstance(raised["timestamp"], str)
    data = raised["data"]
    assert isinstance(data, dict)
    row = hub.alarm(int(str(alarm_id)))
    assert {
        k: data[k] for k in ("account", "incident_number", "type", "hist_text", "priority")
    } == {
        "account": "700001",
        "incident_number": alarm_id,
        "type": row["type"],
        "hist_text": row["hist_text"],
        "priority": row["priority"],
    }
    ids = [event_id_of(e.id) for e in got]
    assert all(e.id.startswith("evt_") for e in got)
    assert ids == sorted(ids)
    stored = {e.event_id: e.body for e in station.outbox_after(0)}
    assert all(orjson.loads(stored[i or 0]) == e.data for i, e in zip(ids, got, strict=True)), (
        "the body is the stored one, unchanged"
    )

    # away: more events meanwhile, then back with the last id seen
    last = got[-1].id
    hub.signal(2, "E130", 1)
    hub.signal(3, "E130", 2)
    hub.signal(3, "R130", 2)
    restored = hub.alarm_of(3, 2)["alarm_id"]

    def restoral_routed() -> list[events.Event] | None:
        found = station.outbox_after(event_id_of(last) or 0)
        return found if found and found[-1].kind == ALARM_RESTORED else None

    missed = wait_for(restoral_routed, "the restoral's event in the outbox")
    # an operator still receiving (another test's) may be handed one of them: alarm.taken
    kinds = [e.kind for e in missed if e.kind != ALARM_TAKEN]
    assert kinds == [ALARM_RAISED, ALARM_RAISED, ALARM_RESTORED]
    with station.reader_of(station.every, last) as again:
        hub.signal(4, "E130", 1)  # and one more after the reconnect
        back = again.wait_for(len(missed) + 1, "the missed events and the new one")
    assert [e.id for e in back[: len(missed)]] == [event_id_text(e.event_id) for e in missed]
    assert [e.data for e in back[: len(missed)]] == [orjson.loads(e.body) for e in missed]
    assert restored in [alarm_of(e) for e in back[: len(missed)] if e.kind == ALARM_RESTORED]
    assert body_of(back[len(missed)])["type"] == ALARM_RAISED
    assert len({e.id for e in got + back}) == len(got) + len(back), "nothing twice"
    assert again.gaps == []


def test_a_key_with_an_account_range_hears_only_of_its_accounts(station: Station) -> None:
    hub = station.hub
    with station.reader_of(station.dealer) as dealer, station.reader_of(station.every) as every:
        hub.signal(5, "E130", 3)  # 700005: the dealer's
        hub.signal(11, "E130", 3)  # 700011: not the dealer's
        answer = hub.station.post({"dnis": "Z9", "panel": "1234", "code": "E130"})
        assert answer.status_code == 200, answer.text  # an unknown line: no account at all
        seen = every.wait_for(3, "the three alarms")
        hub.signal(6, "E130", 3)  # 700006: the dealer's, after all the others
        heard = dealer.wait_for(2, "the dealer's two alarms")
    assert [body_of(e)["data"]["account"] for e in seen[:3]] == ["700005", "700011", ""]  # type: ignore[index]
    assert [body_of(e)["data"]["account"] for e in heard] == ["700005", "700006"]  # type: ignore[index]


def test_a_forgotten_or_unknown_last_event_id_is_a_gap(station: Station) -> None:
    hub = station.hub
    with hub.engine.connect() as conn:
        newest = events.newest(conn)
    with station.reader_of(station.every, event_id_text(newest + 1000)) as ahead:
        hub.signal(7, "E130", 4)
        hub.signal(7, "E130", 5)
        hub.signal(7, "E130", 6)
        [gap] = wait_gap(ahead)
        got = ahead.wait_for(3)
    assert body_of(gap)["last_event_id"] == event_id_text(newest + 1000)
    assert body_of(gap)["resumed_after"] == event_id_text(newest)
    assert (event_id_of(got[0].id) or 0) > newest, "from the next new event"

    with write_transaction(hub.engine) as conn:  # the oldest events forgotten, as the writer does
        kept = events.after(conn, 0, 10_000)
        forgotten = kept[-2].event_id
        conn.execute(delete(s.event).where(s.event.c.event_id <= forgotten))
        conn.execute(
            update(s.sequence).where(s.sequence.c.name == events.FORGOTTEN).values(value=forgotten)
        )
    with station.reader_of(station.every, "evt_1") as behind:
        [gap] = wait_gap(behind)
        first = behind.wait_for(1)[0]
    assert body_of(gap)["resumed_after"] == event_id_text(forgotten)
    assert first.id == event_id_text(kept[-1].event_id), "from the oldest event kept"
    assert behind.received[0].kind == "gap", "the gap comes first"


def wait_gap(reader: EventReader) -> list[Received]:
    return wait_for(lambda: reader.gaps, "a gap event", 30)


def problem(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == code


def test_refusals(station: Station) -> None:
    url = f"{station.hub.url}/api/v1/events"

    def get(key: str | None, **headers: str) -> httpx.Response:
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.get(url, headers=headers, timeout=10)

    problem(get(None), 401, "API-AUTH")
    problem(get("ahk_" + "x" * 43), 401, "API-AUTH")
    problem(get(station.reader), 403, "API-SCOPE")
    problem(get(station.every, **{"Last-Event-ID": "evt_abc"}), 422, "API-INPUT")
    problem(httpx.get(url, params={"last_event_id": "-1"}, headers={
        "Authorization": f"Bearer {station.every}"}, timeout=10), 422, "API-INPUT")  # fmt: skip
    revoked = make_key(station.data_dir, "gone", "--scope", "events:read")
    cli(station.data_dir, "apikey", "revoke", "gone")
    problem(get(revoked), 401, "API-AUTH")


def test_the_node_stops_promptly_with_a_stream_open(tmp_path: Path) -> None:
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    key = make_key(data_dir, "every", "--scope", "events:read")
    with served(data_dir, token, engine) as hub:
        reader = EventReader(hub.url, key).__enter__()
        server = hub.station.server
        assert server.stop(timeout=20) == 0, "the open stream held the stop"
        reader.disconnect()
        assert reader.ended
