"""Action plans in a real browser (Debian's Chromium driven by Playwright) against a real server:
an operator follows a burglary's plan with the keyboard to a verified dispatch (refused before
enhanced call verification, then two calls to two different numbers, the AVS-01 level and the
agency's reference, the call list notified, resolved DISP), and a resolution refused while
required steps are undone, the steps named, then done (one acknowledged with a note).
Screenshots go to ``artifacts/console/``; the documentation's ``console-plan.png`` is a copy of
``plan-dispatch-form.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from alarmhub.core.plans import Step, StepKind
from alarmhub.core.response import Agency, AgencyKind, Contact, Phone
from alarmhub.store import contacts as contact_store
from alarmhub.store import plans
from alarmhub.store import response as data
from tests.support.browser import shot, sign_in_not_receiving, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import Hub, provision_console, served
from tests.support.processes import cli

FOLLOWED, REFUSED = 8, 9  # accounts 700008 and 700009
PREMISES = "555-0100"
GATE = "Check the gate code in the account notes"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    """The console's station; accounts 700008 and 700009 with a premises phone, two contacts
    on PRIMARY and the police; 700009 has its own burglary plan: the call list, then an
    instruction, both required."""
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    data.add_agency(engine, Agency("SPD", AgencyKind.POLICE, "Springfield Police", "555-0911"))
    for n in (FOLLOWED, REFUSED):
        account = f"70{n:04d}"
        contact_store.add_contact(engine, Contact(account, "Alice Owner", (Phone("555-0101"),)))
        contact_store.add_contact(engine, Contact(account, "Bob Keyholder", (Phone("555-0201"),)))
        data.set_account_response(engine, account, {"police": "SPD"}, phone=PREMISES)
    steps = [
        Step(StepKind.CALL_LIST, required=True),
        Step(StepKind.INSTRUCTION, required=True, text=GATE),
    ]
    plans.set_plan(engine, "BURG", steps, account=f"70{REFUSED:04d}")
    with served(data_dir, token, engine) as hub:
        yield hub


def sign_in_and_take(hub: Hub, page: Page, account: int, zone: int) -> int:
    """OP1 signed in, not receiving; a burglary of ``account`` taken on its alarm screen."""
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)
    hub.signal(account, "E130", zone)
    alarm_id = int(hub.alarm_of(account, zone)["alarm_id"])
    page.click(f'#pending tbody tr[data-alarm-id="{alarm_id}"]')
    page.click('#alarm-actions button[data-action="take"]')
    expect(page.locator("#alarm-state")).to_have_text("in process: OP1")
    return alarm_id


def log_call(page: Page, outcome_key: str) -> None:
    """In the open call form: the outcome's key, then Enter logs the call."""
    expect(page.locator("#form-call")).to_be_visible()
    page.keyboard.press(outcome_key)
    page.keyboard.press("Enter")
    expect(page.locator("#form-call")).to_be_hidden()


def test_an_operator_follows_a_burglary_plan_to_a_verified_dispatch(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    alarm_id = sign_in_and_take(hub, page, FOLLOWED, 3)
    steps = page.locator("#plan-steps li")
    expect(steps).to_have_count(4)
    expect(page.locator("#plan-name")).to_have_text("BURG, the shipped plan")
    expect(steps.nth(0)).to_contain_text(f"call the premises {PREMISES}")
    expect(steps.nth(0)).to_have_class("step next")
    expect(steps.nth(1)).to_contain_text("REQUIRED")
    expect(steps.nth(2)).to_contain_text("dispatch police")
    expect(steps.nth(3)).to_contain_text("n/a")  # nothing to notify of before a dispatch
    ecv = page.locator("#plan-ecv")
    expect(ecv).to_contain_text("Enhanced call verification owed")

    # D, level 1, Enter: refused, enhanced call verification is owed
    page.keyboard.press("d")
    expect(page.locator("#form-dispatch")).to_be_visible()
    expect(page.locator("#dispatch-agency")).to_have_value("police")
    expect(page.locator("#dispatch-avs label")).to_have_count(5)
    page.keyboard.press("1")
    expect(page.locator('#dispatch-avs input[value="1"]')).to_be_checked()
    page.keyboard.press("Enter")
    refusal = page.locator("#plan-error")
    expect(refusal).to_contain_text("needs enhanced call verification")
    expect(refusal).to_contain_text("two different numbers")
    assert hub.actions_on(alarm_id) == ["TAKE"]
    page.keyboard.press("Escape")
    expect(page.locator("#form-dispatch")).to_be_hidden()

    # G: the premises, the call form on its number; no answer
    page.keyboard.press("g")
    expect(page.locator("#call-contact")).to_have_value("premises")
    expect(page.locator("#call-phone")).to_have_value(PREMISES)
    log_call(page, "n")
    expect(steps.nth(0)).to_have_class("step done")
    expect(steps.nth(1)).to_have_class("step next")
    expect(page.locator("#alarm-log")).to_contain_text(f"CALL: {PREMISES} NO ANSWER")

    # G: the call list, its next contact; Enter opens the call form on her; answered
    page.keyboard.press("g")
    expect(page.locator('#call-list tr.next button.phone[data-phone="555-0101"]')).to_be_focused()
    # a redraw of the alarm (as the live feed makes one) leaves the cursor where it was
    page.evaluate("document.activeElement.drawnBefore = true; window.alarmhub.loadDetail()")
    page.wait_for_function(
        "!document.querySelector('#call-list button.phone[data-phone=\"555-0101\"]').drawnBefore"
    )
    expect(page.locator('#call-list tr.next button.phone[data-phone="555-0101"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#call-phone")).to_have_value("555-0101")
    log_call(page, "a")
    expect(steps.nth(1)).to_have_class("step done")
    expect(ecv).to_have_text("Enhanced call verification met: two numbers called.")

    # G: the police dispatch, AVS level 2 and the agency's reference
    page.keyboard.press("g")
    expect(page.locator("#form-dispatch")).to_be_visible()
    expect(page.locator("#dispatch-agency")).to_have_value("police")
    expect(page.locator("#plan-error")).to_be_hidden()
    page.keyboard.press("2")
    expect(page.locator('#dispatch-avs input[value="2"]')).to_be_checked()
    page.fill("#dispatch-reference", "5521")
    expect(page.locator("#dispatch-avs")).to_contain_text(
        "Level 2 - verified by a person or an observation that an emergency may be taking place"
    )
    shot(page, "plan-dispatch-form")
    page.keyboard.press("Enter")
    expect(page.locator("#form-dispatch")).to_be_hidden()
    record = "OPR OP1 DISPATCHED POLICE AVS 2 REF 5521"
    expect(page.locator("#alarm-log")).to_contain_text(record)
    expect(page.locator("#plan-dispatches")).to_contain_text("POLICE SPD")
    expect(page.locator("#plan-dispatches")).to_contain_text("AVS 2")
    expect(steps.nth(2)).to_have_class("step done")
    expect(steps.nth(3)).to_have_class("step next")

    # G: notify the call list of the dispatch; the next contact, answered
    page.keyboard.press("g")
    expect(page.locator('#call-list tr.next button.phone[data-phone="555-0201"]')).to_be_focused()
    page.keyboard.press("Enter")
    log_call(page, "a")
    expect(steps.nth(3)).to_have_class("step done")
    expect(page.locator("#plan-steps li.next")).to_have_count(0)
    shot(page, "plan-followed")

    # R: resolved DISP
    page.keyboard.press("r")
    page.select_option("#resolve-code", "DISP")
    page.click('#form-resolve button[type="submit"]')
    expect(page.locator("#alarm-state")).to_have_text("resolved")
    expect(page.locator("#plan-steps button.do")).to_have_count(0)
    history = cli(hub.station.data_dir, "history", f"70{FOLLOWED:04d}", "--json").stdout
    assert record in history
    assert "RESOLVED: DISP" in history
    assert hub.actions_on(alarm_id) == ["TAKE", "CALL", "CALL", "DISP", "CALL", "RSLV"]
    assert problems == [p for p in problems if "status of 409" in p], problems


def test_a_resolution_is_refused_until_the_required_steps_are_done(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    alarm_id = sign_in_and_take(hub, page, REFUSED, 4)
    steps = page.locator("#plan-steps li")
    expect(page.locator("#plan-name")).to_have_text("BURG, this account's plan")
    expect(steps).to_have_count(2)
    expect(page.locator("#plan-ecv")).to_contain_text("owed")

    # FA before the call list is worked: refused, the steps named and marked
    page.keyboard.press("r")
    page.select_option("#resolve-code", "FA")
    page.click('#form-resolve button[type="submit"]')
    named = f"required steps of the plan are not done: 1. call the call list; 2. {GATE}"
    expect(page.locator("#action-error")).to_have_text(named)
    expect(page.locator("#plan-refusal")).to_have_text(f"Not resolved: {named}")
    expect(page.locator("#plan-steps li.owed")).to_have_count(2)
    expect(page.locator("#alarm-state")).to_have_text("in process: OP1")
    shot(page, "plan-resolution-refused")

    # the steps done: the call list (G, Enter, answered), then the instruction with a note
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    expect(page.locator("#call-list tr.next button.phone")).to_be_focused()  # then Enter calls
    page.keyboard.press("Enter")
    log_call(page, "a")
    expect(steps.nth(0)).to_have_class("step done")
    page.keyboard.press("g")
    expect(page.locator("#form-step")).to_be_visible()
    expect(page.locator("#step-label")).to_contain_text(f"Step 2: {GATE}")
    expect(page.locator("#step-note")).to_be_focused()
    page.keyboard.type("gate code given to the patrol")
    page.click('#form-step button[type="submit"]')
    expect(steps.nth(1)).to_have_class("step done")
    expect(page.locator("#alarm-log")).to_contain_text("DID STEP 2 CHECK THE GATE CODE")
    expect(page.locator("#plan-steps li.owed")).to_have_count(0)

    page.keyboard.press("r")
    expect(page.locator("#plan-refusal")).to_be_hidden()
    page.select_option("#resolve-code", "FA")
    page.click('#form-resolve button[type="submit"]')
    expect(page.locator("#alarm-state")).to_have_text("resolved")
    assert hub.actions_on(alarm_id) == ["TAKE", "CALL", "STEP", "RSLV"]
    assert problems == [p for p in problems if "status of 409" in p], problems
