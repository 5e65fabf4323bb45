"""Storm mode in a real browser (Debian's Chromium driven by Playwright) against a real server: a
supervisor switches storm mode on for AC power loss, the AC power alarms of three accounts stay
out of pending and appear on the storm list while a burglary of one of those accounts pends,
the supervisor switches storm mode off and resolves the storm list in one batch; then the
handling report counts them. Screenshots go to ``artifacts/console/``; the documentation's
``docs/images/console-storm.png`` is a copy of ``storm-list.png``.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect
from sqlalchemy import select

from alarmhub.store import schema
from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub
from tests.support.processes import wait_for

ALARM = schema.alarm.c
STORMED = (4, 9, 12)  # accounts 700004, 700009, 700012: AC power lost


def sign_in(hub: Hub, page: Page, code: str) -> None:
    sign_in_not_receiving(page, hub.url, code, PASSWORD)


def storm_alarms(hub: Hub) -> list[int]:
    with hub.engine.connect() as conn:
        rows = conn.execute(
            select(ALARM.alarm_id).where(ALARM.state == "storm").order_by(ALARM.alarm_id)
        )
        return list(rows.scalars())


def states(hub: Hub, ids: list[int]) -> set[str]:
    return {hub.alarm(alarm_id)["state"] for alarm_id in ids}


def test_a_supervisor_runs_storm_mode(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in(hub, page, "SUP")
    views = page.locator("#views")
    expect(views.locator('button[data-view="accounts"]')).to_be_hidden()  # admins only
    views.locator('button[data-view="storm"]').click()
    expect(page.locator("#storm-view")).to_be_visible()
    expect(page.locator("#storm-types-empty")).to_be_visible()
    page.fill('#form-storm input[name="types"]', "acpwr")
    page.click('#form-storm button[type="submit"]')
    row = page.locator('#storm-types tbody tr[data-type="ACPWR"]')
    expect(row).to_contain_text("SUP")
    expect(page.locator("#storm-badge")).to_contain_text("STORM ACPWR")

    for account in STORMED:
        hub.signal(account, "E301", 0)
    hub.signal(STORMED[0], "E130", 5)  # the same account's burglary pends
    burglary = hub.alarm_of(STORMED[0], 5)
    assert burglary["state"] == "pending"
    stormed = wait_for(
        lambda: (ids := storm_alarms(hub)) and len(ids) == 3 and ids, "3 on the list"
    )
    listed = page.locator("#storm-list tbody tr")
    expect(listed).to_have_count(3)
    expect(page.locator("#storm-count")).to_have_text("3")
    expect(row.locator("td").nth(3)).to_have_text("3")
    expect(page.locator("#storm-list")).to_contain_text("Subscriber 9")
    shot(page, "storm-list")

    views.locator('button[data-view="queues"]').click()
    pending = page.locator("#pending tbody")
    expect(pending.locator(f'tr[data-alarm-id="{burglary["alarm_id"]}"]')).to_be_visible()
    for alarm_id in stormed:
        expect(pending.locator(f'tr[data-alarm-id="{alarm_id}"]')).to_have_count(0)
    expect(page.locator("#storm-badge")).to_contain_text("3 on the list")

    # off: the storm list stays offered; one alarm resolved alone, then the rest in one batch
    views.locator('button[data-view="storm"]').click()
    row.locator("button", has_text="Off").click()
    expect(page.locator("#storm-types-empty")).to_be_visible()
    expect(page.locator("#storm-badge")).to_be_hidden()
    expect(page.locator("#banner")).to_contain_text("3 alarms on their storm list")
    expect(listed).to_have_count(3)
    page.locator(f'#storm-list tbody tr[data-alarm-id="{stormed[0]}"] input').check()
    page.select_option('#form-storm-resolve select[name="resolution"]', "RSTR")
    page.click('#form-storm-resolve button[type="submit"]')
    expect(listed).to_have_count(2)
    assert states(hub, stormed[:1]) == {"resolved"}
    # one needs an operator after all: back to pending; then the rest in one batch
    page.locator(f'#storm-list tbody tr[data-alarm-id="{stormed[1]}"] input').check()
    page.click("#storm-pend")
    expect(page.locator("#banner")).to_contain_text("1 alarms of the storm list sent to pending")
    expect(listed).to_have_count(1)
    assert hub.alarm(stormed[1])["state"] == "pending"
    page.fill('#form-storm-resolve input[name="note"]', "power back across the county")
    page.click("#storm-resolve-all")
    expect(page.locator("#storm-list-empty")).to_be_visible()
    expect(page.locator("#banner")).to_contain_text("1 alarms of the storm list resolved")
    assert states(hub, [stormed[0], stormed[2]]) == {"resolved"}
    assert hub.alarm(burglary["alarm_id"])["state"] == "pending"
    assert hub.actions_on(stormed[2]) == ["RSLV"]
    assert hub.actions_on(stormed[1]) == ["STMPD"]

    views.locator('button[data-view="reports"]').click()
    types = page.locator("#report-types tbody")
    expect(types.locator("tr", has_text="ACPWR")).to_contain_text("2")
    expect(page.locator("#report-operators tbody")).to_contain_text("Sam Supervisor")
    shot(page, "storm-report")
    assert problems == [], problems


def test_operators_see_no_storm_or_report_view(hub: Hub, page: Page) -> None:
    sign_in(hub, page, "OP1")
    views = page.locator("#views")
    expect(views.locator('button[data-view="receivers"]')).to_be_visible()  # everyone's
    expect(views.locator('button[data-view="storm"]')).to_be_hidden()
    expect(views.locator('button[data-view="reports"]')).to_be_hidden()
    expect(page.locator("#storm-view")).to_be_hidden()
    expect(page.locator("#reports-view")).to_be_hidden()
