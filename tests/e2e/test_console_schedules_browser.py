"""Open/close schedules in a real browser (Debian's Chromium driven by Playwright) against a real
server: a supervisor opens the Schedules view, types an account, adds a weekly window, a
temporary schedule and a holiday, changes the settings and removes a day's window; an operator
opens a burglary of that account and sees the Schedule block of the alarm screen (today's
windows, no opening yet), records a manual opening and sees it there. Screenshots go to
``artifacts/console/``; the documentation's ``docs/images/console-schedules.png`` is a copy of
``schedules.png``.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub

ACCOUNT = "700007"


def test_a_supervisor_edits_a_schedule_and_an_operator_sees_it(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    sign_in_not_receiving(page, hub.url, "SUP", PASSWORD)
    # an operator, on a page of their own, signed in before the schedule can raise a late alarm
    # (a sign-in receives, and would be handed it)
    browser = page.context.browser
    assert browser is not None
    operator = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    seen = watch_problems(operator)
    sign_in_not_receiving(operator, hub.url, "OP1", PASSWORD)
    page.locator('#views button[data-view="schedules"]').click()
    view = page.locator("#schedules-view")
    expect(view).to_be_visible()
    expect(view.locator("#sched-holidays-empty")).to_be_visible()

    page.fill("#sched-account", ACCOUNT)
    page.locator("#sched-pick button[type=submit]").click()
    expect(view.locator("#sched-title")).to_have_text(f"{ACCOUNT} Subscriber 7")
    expect(view.locator("#sched-none")).to_be_visible()

    window = view.locator("#form-sched-window")
    window.locator('input[name="days"]').fill("mon-sat")
    window.locator('input[name="open"]').fill("08:00")
    window.locator('input[name="close"]').fill("18:00")
    window.locator("button[type=submit]").click()
    expect(view.locator("#sched-windows tbody tr")).to_have_count(6)
    expect(view.locator("#sched-none")).to_be_hidden()
    view.locator('#sched-windows tr[data-day="sat"] button').click()
    expect(view.locator("#sched-windows tbody tr")).to_have_count(5)
    expect(view.locator('#sched-windows tr[data-day="fri"]')).to_contain_text("08:00")

    temporary = view.locator("#form-sched-temporary")
    temporary.locator('input[name="from"]').fill("2030-12-24")
    temporary.locator('input[name="to"]').fill("2030-12-24")
    temporary.locator('input[name="open"]').fill("08:00")
    temporary.locator('input[name="close"]').fill("12:00")
    temporary.locator("button[type=submit]").click()
    expect(view.locator("#sched-temporary tbody tr")).to_contain_text("08:00-12:00")

    settings = view.locator("#form-sched-settings")
    settings.locator('input[name="grace"]').fill("15")
    settings.locator('input[name="late_to_open"]').uncheck()
    settings.locator("button[type=submit]").click()
    expect(view.locator("#sched-summary")).to_contain_text("grace 15 min · late to close")

    holiday = view.locator("#form-holiday")
    holiday.locator('input[name="date"]').fill("2030-12-25")
    holiday.locator('input[name="name"]').fill("Christmas Day")
    holiday.locator("button[type=submit]").click()
    expect(view.locator('#sched-holidays tr[data-date="2030-12-25"]')).to_contain_text("station")
    expect(view.locator("#sched-holidays-empty")).to_be_hidden()
    shot(page, "schedules")

    # a refusal is shown, and nothing changes
    window.locator('input[name="days"]').fill("funday")
    window.locator('input[name="open"]').fill("08:00")
    window.locator('input[name="close"]').fill("18:00")
    window.locator("button[type=submit]").click()
    expect(view.locator("#sched-error")).to_contain_text("day 'funday'")
    expect(view.locator("#sched-windows tbody tr")).to_have_count(5)
    assert [p for p in problems if "422" not in p] == [], problems

    # the operator opens a burglary of the account
    hub.signal(7, "E130", 3)
    burglary = hub.alarm_of(7, 3)
    operator.locator(f'#pending tbody tr[data-alarm-id="{burglary["alarm_id"]}"]').click()
    block = operator.locator("#alarm-schedule")
    expect(block).to_be_visible()
    expect(block.locator("#schedule-facts")).to_contain_text("Last opening")
    expect(block.locator("#schedule-facts")).to_contain_text("Today")
    block.locator("#schedule-open").click()
    expect(block.locator("#schedule-facts")).to_contain_text("by operator OP1 (manual)")
    expect(operator.locator("#banner")).to_contain_text(f"{ACCOUNT} opened by operator OP1")
    shot(operator, "schedule-block")
    assert seen == [], seen

    hub.signal(8, "E130", 4)  # an account with no schedule
    other = hub.alarm_of(8, 4)
    operator.keyboard.press("Escape")
    operator.locator(f'#pending tbody tr[data-alarm-id="{other["alarm_id"]}"]').click()
    expect(block.locator("#schedule-facts")).to_have_text("Scheduleno schedule")
    expect(block.locator("#schedule-open")).to_be_hidden()
    assert seen == [], seen
