"""The Receivers panel in a real browser (Debian's Chromium driven by Playwright) against a real
server: with a Sur-Gard link up, an Ademco 685 serial link failed and a Bosch link idle (their
state set as a holding node reports it, ``store.receivers.report``), and automation outputs
failed with a backlog, up and idle (reported as their sending node reports them,
``store.outputs.report``, by a node that holds their lanes and is not the server), an operator
sees the failed link and output counted on the Receivers button in the header of the queues
(and their alarms pending), opens the panel from it and finds the failed link first and marked,
the up link with its last frame, counts and node, then the failed output first with its address
in use, queue and stale frames; the Receivers button is reached with the keyboard. The
screenshots go to ``artifacts/console/receivers.png`` and ``outputs.png``; the documentation's
``docs/images/console-receivers.png`` and ``console-outputs.png`` are copies of them.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.util import find_spec

from playwright.sync_api import Page, expect

from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.outputs import RETENTION_HOURS_DEFAULT, OutputReport, OutputSettings
from alarmhub.store import outputs, receivers
from alarmhub.store.engine import write_transaction
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
    with write_transaction(hub.engine) as conn:
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
    with write_transaction(hub.engine) as conn:
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


def automation_outputs(hub: Hub) -> None:
    """Three outputs, their lanes held for an hour by node-b (the server never sends them):
    AUTO-MAIN failing for 5 minutes on its backup address with 1,204 frames queued, 3 of them
    stale; FWD-77 (accounts 77...) up; MLR2-OUT (serial, accounts 88...) idle, never
    reported."""
    now = now_us()

    def output(name: str, transport: str, addresses: tuple[str, ...],
               accounts: tuple[str, ...] = ()) -> OutputSettings:  # fmt: skip
        serial = transport == "serial"
        return OutputSettings(0, name, "surgard", transport, addresses,
                              9600 if serial else None, "8N1" if serial else None, accounts,
                              1, 1, 1, 4.0, 30)  # fmt: skip

    with write_transaction(hub.engine) as conn:
        auto = outputs.add(conn, output("AUTO-MAIN", "connect",
                                        ("10.0.5.20:1025", "10.0.5.21:1025")), now)  # fmt: skip
        fwd = outputs.add(conn, output("FWD-77", "connect", ("192.0.2.7:3061",), ("77",)), now)
        mlr = outputs.add(conn, output("MLR2-OUT", "serial", ("/dev/ttyS1",), ("88",)), now)
        for output_id in (auto, fwd, mlr):
            assert outputs.hold(conn, output_id, "node-b", now + units.hours_us(1))
        stale_us = now - units.hours_us(RETENTION_HOURS_DEFAULT + 2)
        wanting = outputs.settings(conn)
        for n in range(1204):  # account 1234: AUTO-MAIN's only
            at_us = stale_us if n < 3 else now - units.seconds_us(300 - n // 5)
            outputs.enqueue_event(conn, "1234", "1234", "E350", "00", "000", at_us, wanting)
        outputs.report(conn, auto, OutputReport(
            "failed", "10.0.5.21:1025", 48_210, 31, 48_206, 2, 29, now - 300_000_000,
            now - 301_000_000, now - 300_000_000, "node-b"))  # fmt: skip
        outputs.report(conn, fwd, OutputReport(
            "up", "192.0.2.7:3061", 311, 0, 311, 0, 0, now - 4_000_000, now - 4_000_000,
            None, "node-b"))  # fmt: skip


def test_an_operator_sees_the_receiver_links(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)  # the failure's alarm stays pending
    links(hub)
    automation_outputs(hub)
    badge = page.locator("#receivers-badge")
    expect(badge).to_have_text("2 FAILED")
    expect(page.locator("#receivers-button")).to_have_attribute(
        "title",
        "RECEIVER LINK FAILED: MX-B; AUTOMATION OUTPUT FAILED: AUTO-MAIN (open the Receivers view)",
    )
    expect(page.locator("#pending tbody")).to_contain_text("RECEIVER LINK FAILURE MX-B")
    expect(page.locator("#pending tbody")).to_contain_text("AUTOMATION OUTPUT FAILURE AUTO-MAIN")
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

    sent = page.locator("#outputs tbody tr")
    expect(sent).to_have_count(3)
    failing = sent.nth(0)
    expect(failing).to_have_attribute("data-output", "AUTO-MAIN")
    expect(failing).to_have_class("link failed")
    expect(failing.locator("td.address")).to_have_text("10.0.5.21:1025")
    expect(failing).to_contain_text("1,204")
    expect(failing.locator("td.stale")).to_have_text("3")
    expect(failing.locator("td.oldest")).to_have_text("26 h")
    expect(failing).to_contain_text("48,210")
    expect(failing).to_contain_text("node-b")
    expect(page.locator('#outputs tbody tr[data-output="FWD-77"] .link-state')).to_have_text("UP")
    idle = page.locator('#outputs tbody tr[data-output="MLR2-OUT"]')
    expect(idle.locator(".link-state")).to_have_text("IDLE")
    expect(idle.locator("td.address")).to_have_text("/dev/ttyS1 9600 8N1")
    expect(page.locator("#outputs-summary")).to_have_text(
        "1 up, 1 failed, 0 down, 1 idle; 1,204 queued"
    )
    page.locator("#outputs").scroll_into_view_if_needed()
    shot(page, "outputs")

    # the views by keyboard: back to the queues, then Tab to Receivers and Enter
    page.locator('#views button[data-view="queues"]').click()
    expect(page.locator("#receivers-view")).to_be_hidden()
    page.locator('#views button[data-view="queues"]').focus()
    page.keyboard.press("Tab")
    expect(page.locator('#views button[data-view="receivers"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#receivers-view")).to_be_visible()
    assert problems == [], problems
