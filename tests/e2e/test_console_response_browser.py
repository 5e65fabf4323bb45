"""Account response data in a real browser (Debian's Chromium driven by Playwright) against a
real server: an operator works the call list of an alarm with the keyboard and the mouse (calls
logged with outcomes, the next contact highlighted, a wrong and a right passcode, the alarm
resolved), and an admin enters a zone and a contact on the account page, still there after a
reload. Screenshots go to ``artifacts/console/``; the documentation's are copies of
``response-alarm-screen.png`` and ``response-account-page.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from alarmhub.core.response import Agency, AgencyKind, Contact, Phone, PhoneKind, Zone
from alarmhub.store import contacts as contact_store
from alarmhub.store import operators
from alarmhub.store import response as data
from tests.support.browser import SHOTS, shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub, provision_console, served
from tests.support.processes import cli

ACCOUNT = "700007"
PASSCODE = "blue-heron"
CONTACTS = (
    ("Alice Owner", "owner", (Phone("555-0101"), Phone("555-0102", PhoneKind.HOME))),
    ("Bob Keyholder", "keyholder", (Phone("555-0201"), Phone("555-0202", PhoneKind.WORK))),
    ("Carol Manager", "manager", (Phone("555-0301"),)),
)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    """The console's station with an admin, and account 700007's response data: three contacts
    on PRIMARY (Alice has the passcode), zone 021 described, police and fire with a permit."""
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    operators.add_operator(engine, "ADM", "Ada Admin", "admin", PASSWORD)
    for name, relation, phones in CONTACTS:
        contact = Contact(ACCOUNT, name, phones, relation=relation)
        hashed = data.hash_passcode(PASSCODE) if name.startswith("Alice") else None
        contact_store.add_contact(engine, contact, passcode_hash=hashed)
    data.set_zone(engine, Zone(ACCOUNT, "021", "BACK DOOR", equipment="door contact"))
    data.add_agency(engine, Agency("SPD", AgencyKind.POLICE, "Springfield Police", "555-0911"))
    data.add_agency(engine, Agency("SFD", AgencyKind.FIRE, "Springfield Fire", "555-0912"))
    data.set_account_response(engine, ACCOUNT, {"police": "SPD", "fire": "SFD"}, "P-2024-117")
    with served(data_dir, token, engine, [PASSCODE]) as hub:
        yield hub


def sign_in(hub: Hub, page: Page, code: str) -> None:
    sign_in_not_receiving(page, hub.url, code, PASSWORD)


def test_an_operator_works_the_call_list(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in(hub, page, "OP1")
    hub.signal(7, "E130", 21)
    alarm_id = hub.alarm_of(7, 21)["alarm_id"]
    page.click(f'#pending tbody tr[data-alarm-id="{alarm_id}"]')
    page.click('#alarm-actions button[data-action="take"]')
    expect(page.locator("#alarm-state")).to_have_text("in process: OP1")

    # the call list in order, the first contact next; the zone, the agencies, the permit
    rows = page.locator("#call-list tbody tr")
    expect(rows).to_have_count(3)
    for row, (name, relation, _) in zip(rows.all(), CONTACTS, strict=True):
        expect(row).to_contain_text(name)
        expect(row).to_contain_text(relation)
    expect(page.locator("#call-list-name")).to_have_text("PRIMARY")
    expect(rows.nth(0)).to_have_class("next")
    expect(rows.nth(0)).to_contain_text("555-0102 home")
    facts = page.locator("#response-facts")
    expect(facts).to_contain_text("BACK DOOR")
    expect(facts).to_contain_text("Springfield Police")
    expect(facts).to_contain_text("555-0911")
    expect(facts).to_contain_text("P-2024-117")

    # 1 chooses Alice (her first number), N no answer, Enter logs it: Bob is next
    page.keyboard.press("1")
    expect(page.locator("#form-call")).to_be_visible()
    expect(page.locator("#call-phone")).to_have_value("555-0101")
    page.keyboard.press("n")
    expect(page.locator('#call-outcomes input[value="no-answer"]')).to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator("#form-call")).to_be_hidden()
    expect(rows.nth(0).locator(".outcome.no-answer")).to_contain_text("NO ANSWER")
    expect(rows.nth(1)).to_have_class("next")
    expect(rows.nth(0)).not_to_have_class("next")
    expect(page.locator("#alarm-log")).to_contain_text("CALL: ALICE OWNER 555-0101 NO ANSWER")

    # Bob's work number, clicked: answered, with a note
    rows.nth(1).locator('button.phone[data-phone="555-0202"]').click()
    expect(page.locator("#form-call")).to_be_visible()
    expect(page.locator("#call-contact")).to_have_value(
        rows.nth(1).get_attribute("data-contact-id") or ""
    )
    expect(page.locator("#call-phone")).to_have_value("555-0202")
    page.keyboard.press("a")
    page.fill("#call-text", "on his way")
    page.click('#form-call button[type="submit"]')
    expect(rows.nth(1).locator(".outcome.answered")).to_contain_text("ANSWERED")
    expect(rows.nth(2)).to_have_class("next")
    expect(page.locator("#alarm-log")).to_contain_text("BOB KEYHOLDER 555-0202 ANSWERED")

    # P: a wrong passcode is not verified, the right one is, and PASSCODE_VERIFIED is Y
    verified = page.locator("#alarm-facts dd.passcode-verified")
    expect(verified).to_have_text("N")
    page.keyboard.press("p")
    expect(page.locator("#passcode-text")).to_be_focused()
    page.keyboard.type("red-herring")
    page.keyboard.press("Enter")
    expect(page.locator("#passcode-answer")).to_have_text("NOT VERIFIED")
    expect(verified).to_have_text("N")
    expect(page.locator("#passcode-text")).to_have_value("")
    page.locator("#passcode-text").fill(PASSCODE)
    page.keyboard.press("Enter")
    expect(page.locator("#passcode-answer")).to_have_text("VERIFIED")
    expect(verified).to_have_text("Y")
    assert hub.alarm(alarm_id)["passcode_verified"] == "Y"
    shot(page, "response-alarm-screen")

    # resolve it (R, once out of the passcode box)
    page.locator("#passcode-text").blur()
    page.keyboard.press("r")
    page.select_option("#resolve-code", "CNCL")
    page.click('#form-resolve button[type="submit"]')
    expect(page.locator("#alarm-state")).to_have_text("resolved")
    history = cli(hub.station.data_dir, "history", ACCOUNT, "--json").stdout
    assert "ALICE OWNER 555-0101 NO ANSWER" in history
    assert "BOB KEYHOLDER 555-0202 ANSWERED" in history
    assert "PASSCODE CHECK: NOT VERIFIED" in history
    assert "PASSCODE CHECK: VERIFIED" in history
    assert "RESOLVED: CNCL" in history
    assert PASSCODE not in history and "red-herring" not in history
    assert problems == [], problems


def test_an_admin_enters_a_zone_and_a_contact(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(hub, page, "ADM")
    page.click('#views button[data-view="accounts"]')
    expect(page.locator("#accounts-view")).to_be_visible()
    expect(page.locator("#pending")).to_be_hidden()
    page.fill("#acct-number", ACCOUNT)
    page.keyboard.press("Enter")
    expect(page.locator("#acct-title")).to_contain_text("Subscriber 7")
    expect(page.locator("#acct-zones tbody tr")).to_have_count(1)

    # the store's validation, shown as it answers
    zone = page.locator("#form-zone")
    zone.locator('[name="zone"]').fill("x1")
    zone.locator('[name="description"]').fill("KITCHEN SMOKE")
    zone.locator("button").click()
    expect(page.locator("#acct-error")).to_have_text("zone must be a number from 000 to 999")
    zone.locator('[name="zone"]').fill("5")
    zone.locator('[name="equipment"]').fill("smoke detector")
    zone.locator("button").click()
    expect(page.locator("#acct-error")).to_be_hidden()
    expect(page.locator('#acct-zones tr[data-zone="005"]')).to_contain_text("KITCHEN SMOKE")

    contact = page.locator("#form-contact")
    contact.locator('[name="name"]').fill("Dora Neighbour")
    contact.locator('[name="relation"]').fill("neighbour")
    contact.locator('[name="phone1"]').fill("555-0401")
    contact.locator('[name="kind1"]').select_option("home")
    contact.locator('[name="lists"]').fill("PRIMARY 2, FIRE")
    contact.locator('[name="passcode"]').fill("green-finch")
    contact.locator('button[type="submit"]').click()
    row = page.locator("#acct-contacts tbody tr", has_text="Dora Neighbour")
    expect(row).to_contain_text("555-0401 home")
    expect(row).to_contain_text("FIRE 1, PRIMARY 2")
    expect(row).to_contain_text("set")
    primary = page.locator('#acct-lists [data-list="PRIMARY"] li')
    expect(primary).to_have_count(4)
    expect(primary.nth(1)).to_contain_text("Dora Neighbour")
    # move her up on PRIMARY: first
    primary.nth(1).locator('button[data-move="up"]').click()
    expect(primary.nth(0)).to_contain_text("Dora Neighbour")

    # after a reload: still there, the passcode nowhere in the page
    page.reload()
    page.click('#views button[data-view="accounts"]')
    page.fill("#acct-number", ACCOUNT)
    page.keyboard.press("Enter")
    expect(page.locator('#acct-zones tr[data-zone="005"]')).to_contain_text("smoke detector")
    expect(row).to_contain_text("555-0401 home")
    expect(primary.nth(0)).to_contain_text("Dora Neighbour")
    assert "green-finch" not in page.content()
    row.locator("button", has_text="Edit").click()
    expect(contact.locator('[name="passcode"]')).to_have_value("")
    expect(contact.locator('[name="lists"]')).to_have_value("FIRE 1, PRIMARY 1")
    page.screenshot(path=str(SHOTS / "response-account-page.png"), full_page=True)
    zones = cli(hub.station.data_dir, "zone", "list", ACCOUNT, "--json").stdout
    assert "KITCHEN SMOKE" in zones
    refused = "the server responded with a status of 422"  # the zone refused above
    assert [p for p in problems if refused not in p] == [], problems


def test_operators_see_no_account_page(hub: Hub, page: Page) -> None:
    sign_in(hub, page, "OP1")
    expect(page.locator('#views button[data-view="receivers"]')).to_be_visible()
    expect(page.locator('#views button[data-view="accounts"]')).to_be_hidden()
    expect(page.locator("#accounts-view")).to_be_hidden()
