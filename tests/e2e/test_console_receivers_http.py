"""The console's Receivers panel through its JSON API, on both databases: ``GET
/console/api/receivers`` lists every receiver link with its state and counts as the holding node
reported them (``store.receivers.report``), failed links first, with the number failed; a
session is needed (401 CONSOLE-SESSION); the frame's text comes as stored (escaped).

The node runs in the test's process; the console signs in through the form.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.clock import now_us
from alarmhub.store import operators, receivers
from alarmhub.store.engine import open_engine
from alarmhub.store.receivers import LinkReport, LinkSettings
from tests.support.console_client import PASSWORD, Console
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running

pytestmark = pytest.mark.backends("sqlite", "postgresql")

FRAME = "5011 181234E13001015[DC4]"
SETTINGS = (
    LinkSettings("SG-MAIN", "surgard", "listen", "0.0.0.0:1025", line_digits=3),
    LinkSettings("MX-B", "ademco685", "serial", "/dev/ttyUSB0", baud=19200, framing="7E1"),
    LinkSettings("D65-NORTH", "d6500", "connect", "10.0.0.7:4001"),
)


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHub]:
    data_dir: Path = tmp_path_factory.mktemp("receivers")
    engine = open_engine(database_url(data_dir))
    operators.add_operator(engine, "OP1", "Olive Operator", "operator", PASSWORD)
    with running(NodeHub, data_dir, "", engine, "") as hub:
        yield hub


def report(hub: NodeHub, *reports: LinkReport) -> None:
    with hub.engine.begin() as conn:
        receivers.report(conn, reports, now_us())


def test_the_panel_lists_links_failed_first(hub: NodeHub) -> None:
    console = hub.console("OP1")
    empty = console.get("/receivers").json()
    assert (empty["links"], empty["failed"]) == ([], 0)

    now = now_us()
    with hub.engine.begin() as conn:
        for link in SETTINGS:
            receivers.add_link(conn, link, now)
        receivers.add_line(conn, "SG-MAIN", 1, 1, "C1", now)
        receivers.add_line(conn, "SG-MAIN", 1, 2, "C2", now)
    seen = now - 4_000_000
    report(
        hub,
        LinkReport("SG-MAIN", "up", "node-a", seen, FRAME, 120, 118, 2, 1, 6),
        LinkReport("MX-B", "failed", "node-b", seen - 600_000_000, None, 5, 5, 0, 0, 0),
    )

    answer = console.get("/receivers")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["failed"] == 1
    assert [(x["name"], x["state"]) for x in body["links"]] == [
        ("MX-B", "failed"),  # failed first, then by name
        ("D65-NORTH", "idle"),
        ("SG-MAIN", "up"),
    ]
    by_name: dict[str, dict[str, Any]] = {x["name"]: x for x in body["links"]}
    main = by_name["SG-MAIN"]
    assert (main["protocol"], main["transport"], main["address"]) == (
        "surgard", "listen", "0.0.0.0:1025",
    )  # fmt: skip
    assert (main["last_seen_us"], main["last_frame"], main["held_by"]) == (seen, FRAME, "node-a")
    counts = ("per_minute", "frames", "acks", "naks", "unreadable", "lines")
    assert [main[k] for k in counts] == [6, 120, 118, 2, 1, 2]
    serial = by_name["MX-B"]
    assert (serial["address"], serial["baud"], serial["framing"]) == ("/dev/ttyUSB0", 19200, "7E1")
    assert (serial["held_by"], serial["lines"]) == ("node-b", 0)
    assert by_name["D65-NORTH"]["last_seen_us"] is None

    # the link comes back: nothing failed
    report(hub, LinkReport("MX-B", "up", "node-b", now_us(), FRAME, 6, 6, 0, 0, 1))
    again = console.get("/receivers").json()
    assert again["failed"] == 0
    assert [x["name"] for x in again["links"]] == ["D65-NORTH", "MX-B", "SG-MAIN"]


def test_the_panel_needs_a_session(hub: NodeHub) -> None:
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        refused(stranger.get("/receivers"), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
