"""The console's Receivers panel over the store, on SQLite and PostgreSQL: its endpoint
(``ReceiversPanel.receivers``, as ``GET /console/api/receivers`` calls it) lists every link
with its settings and what its holding node reported (``store.receivers.report``), failed links
first, then by name, with how many are failed (and the TYPE of their alarm, which the page
watches for in the queues); a link reported up again is no longer failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.console.receivers import LINK_FIELDS, ReceiversPanel
from alarmhub.core.alarm_types import RECEIVER_LINK_FAILURE
from alarmhub.store import receivers
from alarmhub.store.receivers import LinkReport, LinkSettings

T = TypeVar("T")
FRAME = "5011 181234E13001015[DC4]"
SETTINGS = (
    LinkSettings("SG-MAIN", "surgard", "listen", "0.0.0.0:1025", line_digits=3),
    LinkSettings("MX-B", "ademco685", "serial", "/dev/ttyUSB0", baud=19200, framing="7E1"),
    LinkSettings("D65-NORTH", "d6500", "connect", "10.0.0.7:4001"),
)


class Reads:
    """The console's reads (``Plumbing.read``) on an engine, in the caller's thread."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def read(self, work: Callable[[Connection], T]) -> T:
        with self.engine.connect() as conn:
            return work(conn)

    async def write(self, work: Callable[[Connection], T]) -> T:
        with self.engine.begin() as conn:
            return work(conn)


def panel(engine: Engine) -> dict[str, Any]:
    answer = ReceiversPanel(Reads(engine)).receivers(cast(Any, None), cast(Any, None))
    return asyncio.run(answer)


def report(engine: Engine, *reports: LinkReport) -> None:
    with engine.begin() as conn:
        receivers.report(conn, reports, now_us())


def test_the_panel_lists_links_failed_first(engine: Engine) -> None:
    assert (panel(engine)["links"], panel(engine)["failed"]) == ([], 0)
    now = now_us()
    with engine.begin() as conn:
        for link in SETTINGS:
            receivers.add_link(conn, link, now)
        receivers.add_line(conn, "SG-MAIN", 1, 1, "C1", now)
        receivers.add_line(conn, "SG-MAIN", 1, 2, "C2", now)
    seen = now - 4_000_000
    report(
        engine,
        LinkReport("SG-MAIN", "up", "node-a", seen, FRAME, 120, 118, 2, 1, 6),
        LinkReport("MX-B", "failed", "node-b", seen - 600_000_000, None, 5, 5, 0, 0, 0),
    )

    body = panel(engine)
    assert (body["failed"], body["alarm_type"]) == (1, RECEIVER_LINK_FAILURE.type)
    assert [(x["name"], x["state"]) for x in body["links"]] == [
        ("MX-B", "failed"),  # failed first, then by name
        ("D65-NORTH", "idle"),
        ("SG-MAIN", "up"),
    ]
    assert all(tuple(x) == LINK_FIELDS for x in body["links"])
    by_name = {x["name"]: x for x in body["links"]}
    assert by_name["SG-MAIN"] == {
        "name": "SG-MAIN", "protocol": "surgard", "transport": "listen",
        "address": "0.0.0.0:1025", "baud": None, "framing": None, "state": "up",
        "held_by": "node-a", "last_seen_us": seen, "last_frame": FRAME, "per_minute": 6,
        "frames": 120, "acks": 118, "naks": 2, "unreadable": 1, "lines": 2,
    }  # fmt: skip
    serial = by_name["MX-B"]
    assert (serial["address"], serial["baud"], serial["framing"]) == ("/dev/ttyUSB0", 19200, "7E1")
    assert (serial["held_by"], serial["lines"]) == ("node-b", 0)
    assert by_name["D65-NORTH"]["last_seen_us"] is None

    report(engine, LinkReport("MX-B", "up", "node-b", now_us(), FRAME, 6, 6, 0, 0, 1))
    again = panel(engine)
    assert again["failed"] == 0
    assert [(x["name"], x["state"]) for x in again["links"]] == [
        ("D65-NORTH", "idle"),
        ("MX-B", "up"),
        ("SG-MAIN", "up"),
    ]
