"""One operator per site in a real browser (Debian's Chromium driven by Playwright) against a
real server: an operator takes a burglary, the site's next alarms join their work and show as
siblings on the alarm screen, and the operator resolves them together with the keyboard; a
supervisor moves a site's alarms to another operator. Screenshots go to
``artifacts/console/``; the documentation's ``console-siblings.png`` is a copy of
``sites-siblings.png``.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub

SITE = 12  # account 700012
OTHER = 13


def sign_in(hub: Hub, page: Page, code: str) -> None:
    sign_in_not_receiving(page, hub.url, code, PASSWORD)


def test_sibling_alarms_go_to_the_same_operator_and_resolve_together(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in(hub, page, "OP1")
    hub.signal(SITE, "E130", 3)
    first = hub.alarm_of(SITE, 3)["alarm_id"]
    page.click(f'#pending tbody tr[data-alarm-id="{first}"]')
    page.click('#alarm-actions button[data-action="take"]')
    expect(page.locator("#alarm-state")).to_have_text("in process: OP1")
    expect(page.locator("#sibling-list tbody")).to_have_text("none")

    # the site's next alarms join OP1's work, busy as they are; another site's stays pending
    hub.signal(SITE, "E131", 7)  # a perimeter burglary and AC power loss: no required step
    hub.signal(SITE, "E301", 1)
    hub.signal(OTHER, "E130", 2)
    perimeter = hub.alarm_of(SITE, 7)["alarm_id"]
    power = hub.alarm_of(SITE, 1)["alarm_id"]
    other = hub.alarm_of(OTHER, 2)["alarm_id"]
    siblings = page.locator("#sibling-list tbody tr")
    expect(siblings).to_have_count(2)
    expect(siblings.nth(0)).to_contain_text("in process: OP1")
    expect(page.locator("#sibling-count")).to_have_text("2")
    handed = page.locator(f'#in-process tbody tr[data-alarm-id="{perimeter}"]')
    expect(handed).to_contain_text("OP1")
    expect(page.locator(f'#pending tbody tr[data-alarm-id="{other}"]')).to_be_visible()
    assert hub.actions_on(perimeter) == ["HAND"]

    # S goes to the siblings, Enter opens one; its screen lists the first alarm
    page.keyboard.press("s")
    expect(page.locator(f'#sibling-list button[data-alarm-id="{perimeter}"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#alarm-title")).to_contain_text("ZONE 007")
    expect(page.locator(f'#sibling-list tr[data-alarm-id="{first}"]')).to_be_visible()
    page.keyboard.press("Escape")
    page.click(f'#in-process tbody tr[data-alarm-id="{first}"]')
    expect(page.locator("#sibling-list tbody tr")).to_have_count(2)

    # R, a resolution, the two siblings ticked with the keyboard, Enter: one incident
    page.keyboard.press("r")
    expect(page.locator("#resolve-siblings")).to_be_visible()
    page.select_option("#resolve-code", "FA")
    page.fill("#resolve-note", "customer set it off twice")
    boxes = page.locator('#resolve-siblings input[name="sibling"]')
    expect(boxes).to_have_count(2)
    expect(boxes.nth(0)).to_have_value(str(perimeter))
    expect(boxes.nth(1)).to_have_value(str(power))
    for n in range(2):
        boxes.nth(n).focus()
        page.keyboard.press("Space")
        expect(boxes.nth(n)).to_be_checked()
    shot(page, "sites-siblings")
    page.keyboard.press("Enter")
    expect(page.locator("#alarm-state")).to_have_text("resolved")
    for alarm_id in (first, perimeter, power):
        assert hub.alarm(alarm_id)["resolution"] == "FA"
        assert hub.actions_on(alarm_id)[-1] == "RSLV"
    assert hub.alarm(other)["state"] == "pending"
    assert problems == [], problems


def test_a_supervisor_moves_a_site_to_another_operator(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    op2 = hub.console().sign_in("OP2", PASSWORD)
    op2.ok("/receiving", {"receiving": False})
    op1 = hub.console().sign_in("OP1", PASSWORD)
    op1.ok("/receiving", {"receiving": False})
    hub.signal(SITE, "E130", 4)
    alarm_id = hub.alarm_of(SITE, 4)["alarm_id"]
    op1.ok(f"/alarms/{alarm_id}/take")
    sign_in(hub, page, "SUP")
    page.click(f'#in-process tbody tr[data-alarm-id="{alarm_id}"]')
    expect(page.locator("#form-move")).to_be_visible()
    page.keyboard.press("m")
    expect(page.locator("#move-to")).to_be_focused()
    page.select_option("#move-to", "OP2")
    page.keyboard.press("Enter")
    expect(page.locator("#alarm-state")).to_have_text("in process: OP2")
    expect(page.locator("#alarm-log")).to_contain_text("OPR SUP MOVED ALARM: FROM OP1 TO OP2")
    assert hub.alarm(alarm_id)["opr"] == "OP2"
    assert problems == [], problems
