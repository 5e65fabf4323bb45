"""The integrator API's client (``alarmhub.client.ApiClient``) against a real node: pages
followed to the end, ETags carried, refusals as ``ApiError`` with their codes, the event stream
read and resumed after an event."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.client import ApiClient, ApiError
from tests.support.console_station import Hub, provision_console, served
from tests.support.processes import cli_json

SCOPES = ("accounts:read", "accounts:write", "events:read")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Hub, ApiClient]]:
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    scopes = [a for scope in SCOPES for a in ("--scope", scope)]
    key = cli_json(data_dir, "apikey", "create", "--name", "app", *scopes, "--json")
    assert isinstance(key, dict)
    with served(data_dir, token, engine) as hub, ApiClient(hub.url, str(key["key"])) as client:
        yield hub, client


def test_pages_etags_refusals_and_the_event_stream(api: tuple[Hub, ApiClient]) -> None:
    hub, client = api
    numbers = [a["account"] for a in client.pages("/accounts", limit=7)]
    assert numbers == [f"70{n:04d}" for n in range(1, 31)]  # every account once, in order

    account, etag = client.get_with_etag("/accounts/700001")
    assert etag
    changed = client.put("/accounts/700001", {**account, "city": "Shelbyville"}, if_match=etag)
    assert changed["city"] == "Shelbyville"
    with pytest.raises(ApiError) as stale:
        client.put("/accounts/700001", {**account, "city": "Ogdenville"}, if_match=etag)
    assert (stale.value.status, stale.value.code) == (412, "API-ETAG")
    with pytest.raises(ApiError) as missing:
        client.get("/accounts/799999")
    assert (missing.value.status, missing.value.code) == (404, "API-NOTFOUND")

    hub.signal(2, "E130", 4)
    hub.signal(3, "E130", 5)
    first = next(client.events(last_event_id="evt_0"))
    assert first.kind == "alarm.raised" and first.data["data"]["account"] == "700002"
    second = next(client.events(last_event_id=first.id))  # resumed after the first
    assert second.kind == "alarm.raised" and second.data["data"]["account"] == "700003"
