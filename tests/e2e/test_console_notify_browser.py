"""The notify step in a real browser (Debian's Chromium driven by Playwright) against a real
server: an operator takes a burglary, presses E, sees the contacts that can be messaged (the
subscriber of alarms checked by SMS, the call list's other contact not), adds her e-mail, sends,
and sees the step done, the action in the alarm's log and each message listed on the alarm
screen. The station's SMTP server (aiosmtpd, its own process) refuses her mailbox (550): the
message fails for good, and the Messages view's badge counts it; the mailbox mended, Tab reaches
its Resend, Enter queues it again and it is delivered. Screenshots go to ``artifacts/console/``
(``notify-sent.png``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from alarmhub.core import notifications
from alarmhub.core.response import Contact, Phone, PhoneKind
from alarmhub.store import contacts as contact_store
from alarmhub.store import schema
from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub, provision_console, served
from tests.support.processes import cli, free_port, wait_for
from tests.support.smtp_server import SmtpServer

ACCOUNT = 11  # 700011
NOTIFY_STEP = 4  # the shipped burglary plan: premises, call list, police, notify
NO_MAILBOX = "550 5.1.1 no such mailbox"


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    """The station's SMTP server, refusing every recipient until told otherwise."""
    server = SmtpServer(tmp_path / "smtp", free_port()).start()
    server.answer("rcpt", NO_MAILBOX)
    yield server
    server.stop()


@pytest.fixture
def hub(tmp_path: Path, smtp: SmtpServer) -> Iterator[Hub]:
    """The console's station, its e-mail sent through ``smtp``; account 700011 with Alice
    (e-mail, a home phone) and Bob (a mobile, subscribed to alarms by SMS, no SMS gateway set:
    his message waits queued), both on PRIMARY."""
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    cli(data_dir, "notify", "smtp", "--url", f"smtp://127.0.0.1:{smtp.port}",
        "--from", "station@example.com")  # fmt: skip
    account = f"70{ACCOUNT:04d}"
    alice = Contact(account, "Alice Owner", (Phone("555-0101", PhoneKind.HOME),),
                    email="alice@example.com")  # fmt: skip
    bob = Contact(account, "Bob Keyholder", (Phone("+15550201"),), notify=("alarm",),
                  notify_by=("sms",))  # fmt: skip
    for contact in (alice, bob):
        contact_store.add_contact(engine, contact)
    with served(data_dir, token, engine) as hub:
        yield hub


def failed(hub: Hub) -> list[str]:
    """The recipients of the messages that failed for good."""
    n = schema.notification.c
    with hub.engine.connect() as conn:
        return list(
            conn.execute(select(n.recipient).where(n.state == notifications.FAILED)).scalars()
        )


def test_an_operator_messages_the_contacts_and_resends_a_failed_message(
    hub: Hub, smtp: SmtpServer, page: Page
) -> None:
    problems = watch_problems(page)
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)
    hub.signal(ACCOUNT, "E130", 3)
    alarm_id = int(hub.alarm_of(ACCOUNT, 3)["alarm_id"])
    page.click(f'#pending tbody tr[data-alarm-id="{alarm_id}"]')
    page.click('#alarm-actions button[data-action="take"]')
    expect(page.locator("#alarm-state")).to_have_text("in process: OP1")
    listed = page.locator("#alarm-messages-table tbody tr")
    expect(listed).to_have_count(1)  # Bob subscribes to alarms: the alarm messaged him
    expect(listed.nth(0)).to_contain_text("Bob Keyholder")

    page.keyboard.press("e")
    form = page.locator("#form-notify")
    expect(form).to_be_visible()
    expect(page.locator("#notify-legend")).to_have_text(
        f"Step {NOTIFY_STEP}: message about this alarm"
    )
    alice_mail = page.locator('#notify-recipients input[data-channel="email"]')
    bob_sms = page.locator('#notify-recipients input[data-channel="sms"]')
    expect(alice_mail).not_to_be_checked()
    expect(bob_sms).to_be_checked()
    alice_mail.check()
    shot(page, "notify-form")
    form.locator('button[type="submit"]').click()
    expect(form).to_be_hidden()
    expect(page.locator("#plan-steps li").nth(NOTIFY_STEP - 1)).to_have_class("step done")
    note = "MESSAGED Alice Owner BY EMAIL; Bob Keyholder BY SMS"
    expect(page.locator("#alarm-log")).to_contain_text(note)
    expect(listed).to_have_count(3)
    expect(listed.nth(0)).to_contain_text("+15550201")  # newest first
    expect(listed.nth(1)).to_contain_text("alice@example.com")
    # the table, not a row: its rows are drawn again as each message's state comes in
    page.locator("#alarm-messages-table").scroll_into_view_if_needed()
    shot(page, "notify-sent")

    # her mailbox refused (550): the message fails for good; the Messages button counts it
    wait_for(lambda: failed(hub) == ["alice@example.com"], "her message failed")
    page.keyboard.press("Escape")  # the alarm screen closed
    page.click("#messages-button")
    expect(page.locator("#messages-badge")).to_have_text("1 FAILED")
    row = page.locator("#failed-messages tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("alice@example.com")
    expect(row).to_contain_text(NO_MAILBOX)
    resend = row.locator("button[data-resend]")
    expect(resend).to_be_focused()  # the view hands the keyboard its first Resend
    shot(page, "notify-failed")
    smtp.answer("rcpt", None)  # the mailbox mended: Tab, Enter resends it
    page.keyboard.press("Enter")
    expect(row).to_have_count(0)
    expect(page.locator("#messages-badge")).to_be_hidden()
    wait_for(lambda: [m.rcpt_tos for m in smtp.arrived()] == [["alice@example.com"]], "delivered")
    assert problems == []
