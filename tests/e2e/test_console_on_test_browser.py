"""On test in a real browser (Debian's Chromium driven by Playwright) against a real server: an
operator opens a burglary's alarm screen, puts its account on test with the key T (the form
comes filled with the account), sees it in the On test panel with its zones, who asked and when
it returns; the account's next burglary goes to history only; another account is put on test by
typing it; the operator ends a test early. Screenshots go to ``artifacts/console/``; the
documentation's ``docs/images/console-on-test.png`` is a copy of ``on-test.png``.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect
from sqlalchemy import select

from alarmhub.store import schema
from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub
from tests.support.processes import wait_for

H = schema.history.c


def path_of(hub: Hub, account: str, zone: str) -> str | None:
    with hub.engine.connect() as conn:
        return conn.execute(
            select(H.pr_checksum).where(
                H.account_number == account, H.zone == zone, H.code == "E130"
            )
        ).scalar()


def test_an_operator_puts_an_account_on_test_and_ends_it(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)
    panel = page.locator("#ontest-panel")
    expect(panel.locator("#ontest-empty")).to_be_visible()

    hub.signal(7, "E130", 3)
    burglary = hub.alarm_of(7, 3)
    page.locator(f'#pending tbody tr[data-alarm-id="{burglary["alarm_id"]}"]').click()
    expect(page.locator("#alarm-screen")).to_be_visible()
    expect(page.locator("#alarm-title")).to_contain_text("700007")
    page.keyboard.press("t")
    form = page.locator("#form-ontest")
    expect(form).to_be_visible()
    expect(form.locator('input[name="account"]')).to_have_value("700007")
    form.locator('input[name="minutes"]').fill("45")
    form.locator('input[name="zones"]').fill("3 5")
    form.locator('input[name="by"]').fill("J Smith")
    form.locator('input[name="reason"]').fill("panel service")
    form.locator('button[type="submit"]').click()
    expect(form).to_be_hidden()
    expect(page.locator("#banner")).to_contain_text("700007 on test until")
    page.keyboard.press("Escape")  # the alarm screen
    expect(page.locator("#alarm-screen")).to_be_hidden()

    row = panel.locator('#ontest tbody tr[data-account="700007"]')
    expect(row).to_contain_text("Subscriber 7")
    expect(row).to_contain_text("zones 003 005")
    expect(row).to_contain_text("by J Smith (OPR OP1): panel service")
    expect(row).to_contain_text(re_minutes_left(45))
    expect(panel.locator("#ontest-count")).to_have_text("1")

    hub.signal(7, "E130", 5)  # on test: history only
    wait_for(lambda: path_of(hub, "700007", "005") == "ONTEST", "the burglary on test routed")
    expect(page.locator("#pending tbody tr")).to_have_count(1)  # the burglary before the test

    # a typed account, on test for every zone
    page.click("#ontest-new")
    expect(form.locator('input[name="account"]')).to_have_value("")
    form.locator('input[name="account"]').fill("700012")
    form.locator('input[name="minutes"]').fill("120")
    form.locator('input[name="types"]').fill("burg fire")
    form.locator('input[name="by"]').fill("Acme Alarm Service")
    form.locator('button[type="submit"]').click()
    expect(panel.locator('#ontest tbody tr[data-account="700012"]')).to_contain_text(
        "every zone · TYPEs BURG FIRE"
    )
    expect(panel.locator("#ontest tbody tr").first).to_have_attribute("data-account", "700007")
    shot(page, "on-test")

    row.locator("button", has_text="End test").click()
    expect(row).to_have_count(0)
    expect(page.locator("#banner")).to_contain_text("700007 returned from test")
    expect(panel.locator("#ontest-count")).to_have_text("1")
    assert problems == [], problems

    # a refusal is shown in the form, which stays open (the browser logs the 404 it got)
    page.click("#ontest-new")
    form.locator('input[name="account"]').fill("799999")
    form.locator('input[name="by"]').fill("x")
    form.locator('button[type="submit"]').click()
    expect(page.locator("#ontest-form-error")).to_contain_text("no account '799999'")
    expect(form).to_be_visible()
    page.keyboard.press("Escape")
    expect(form).to_be_hidden()
    assert [p for p in problems if "404" not in p] == [], problems


def re_minutes_left(minutes: int) -> re.Pattern[str]:
    """``45 min left`` or ``44 min left`` (a minute may pass before the page is drawn)."""
    return re.compile(rf"({minutes}|{minutes - 1}) min left")
