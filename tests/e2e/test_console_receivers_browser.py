"""The Receivers panel in a real browser (Debian's Chromium driven by Playwright) against a real
server: with a Sur-Gard link up, an Ademco 685 serial link failed and a Bosch link idle (their
state set as a holding node reports it, ``store.receivers.report``), an operator sees the failed
link counted on the Receivers button in the header of the queues (and its RECEIVER LINK FAILURE
pending), opens the panel from it and finds the failed link first and marked, the up link with
its last frame, counts and node; the Receivers button is reached with the keyboard. The
screenshot goes to ``artifacts/console/receivers.png``; the documentation's
``docs/images/console-receivers.png`` is a copy of it.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.util import find_spec

from playwright.sync_api import Page, expect

from alarmhub.clock import now_us
from alarmhub.store import receivers
from alarmhub.store.receivers import LinkReport, LinkSettings
from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub
from tests.support.processes import free_port, wait_for

FRAME = "5011 181234E13001015[DC4]"
ADEMCO = "[LF]11 1234 18 E130 01 C015[CR]"


HOUR_S = 3600  # no link goes silent for its heartbeat timeout while the test runs
REPORTS = (
    LinkReport("SG-MAIN", "up", "node-a", 0, FRAME, 4812, 4811, 1, 2, 14),
    LinkReport("MX-B", "failed", "node-b", 0, ADEMCO, 311, 311, 0, 0, 0),
)
AGO_US = {"SG-MAIN": 3_000_000, "MX-B": 420_000_000}


def report(hub: Hub) -> None:
    """What the holding nodes last reported: SG-MAIN up 3 s ago, MX-B failed 7 minutes ago."""
    now = now_us()
    with hub.engine.begin() as conn:
        receivers.report(
            conn, [replace(r, last_seen_us=now - AGO_US[r.name]) for r in REPORTS], now
        )


def links(hub: Hub) -> None:
    """Three links with lines, SG-MAIN up and MX-B failed. A node that runs receiver links
    reports each one it starts: the test's reports are written again after those."""
    now = now_us()
    settings = (
        LinkSettings("SG-MAIN", "surgard", "listen", f"127.0.0.1:{free_port()}",
                     line_digits=3, heartbeat_timeout_s=HOUR_S),
        LinkSettings("MX-B", "ademco685", "serial", "/dev/ttyUSB7", baud=9600,
                     framing="8N1", heartbeat_timeout_s=HOUR_S),
        LinkSettings("D65-NORTH", "d6500", "connect", "127.0.0.1:9", heartbeat_timeout_s=HOUR_S),
    )  # fmt: skip
    with hub.engine.begin() as conn:
        for link in settings:
            receivers.add_link(conn, link, now)
        for line in (1, 2, 3):
            receivers.add_line(conn, "SG-MAIN", 1, line, f"C{line}", now)
        receivers.add_line(conn, "MX-B", 1, 1, "C9", now)
    report(hub)
    if find_spec("alarmhub.receivers.links") is not None:  # the node runs the links

        def reported_by_node() -> bool:
            with hub.engine.connect() as conn:
                holders = {row["held_by"] for row in receivers.link_states(conn)}
            return not holders & {None, "node-a", "node-b"}

        wait_for(reported_by_node, "the node's first report of each link")
        report(hub)


def test_an_operator_sees_the_receiver_links(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)  # the failure's alarm stays pending
    links(hub)
    badge = page.locator("#receivers-badge")
    expect(badge).to_have_text("1 FAILED")
    expect(page.locator("#receivers-button")).to_have_attribute(
        "title", "RECEIVER LINK FAILED: MX-B (open the Receivers view)"
    )
    expect(page.locator("#pending tbody")).to_contain_text("RECEIVER LINK FAILURE MX-B")
    expect(page.locator("#receivers-view")).to_be_hidden()
    page.locator("#receivers-button").click()
    expect(page.locator("#receivers-view")).to_be_visible()
    rows = page.locator("#receivers tbody tr")
    expect(rows).to_have_count(3)
    failed = rows.nth(0)
    expect(failed).to_have_attribute("data-link", "MX-B")
    expect(failed).to_have_class("link failed")
    expect(failed).to_contain_text("/dev/ttyUSB7 9600 8N1")
    expect(failed.locator("td.frame")).to_have_text(ADEMCO)
    expect(failed).to_contain_text("node-b")
    up = page.locator('#receivers tbody tr[data-link="SG-MAIN"]')
    expect(up.locator(".link-state")).to_have_text("UP")
    expect(up.locator("td.frame")).to_have_text(FRAME)
    expect(up).to_contain_text("4,812")
    expect(up).to_contain_text("node-a")
    expect(page.locator('#receivers tbody tr[data-link="D65-NORTH"] .link-state')).to_have_text(
        "IDLE"
    )
    expect(page.locator("#receivers-summary")).to_have_text("1 up, 1 failed, 1 idle")
    shot(page, "receivers")

    # the views by keyboard: back to the queues, then Tab to Receivers and Enter
    page.locator('#views button[data-view="queues"]').click()
    expect(page.locator("#receivers-view")).to_be_hidden()
    page.locator('#views button[data-view="queues"]').focus()
    page.keyboard.press("Tab")
    expect(page.locator('#views button[data-view="receivers"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#receivers-view")).to_be_visible()
    assert problems == [], problems
