"""The alarm screen's focus rules and feedback in a real browser (Debian's Chromium driven by
Playwright) against a real server, on a busy fire of account 700042 at 1280x800: after a passcode
check the cursor leaves the box, so P works again (the box cleared and focused, no "p" typed);
Enter in the call form's note logs the call (Shift+Enter a new line); a form opened by its key is
in view with the focus in it; a resolve says so on the feedback line, with the alarm that opens
next, and that alarm's screen shows from its top.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import cut_off, shot, sign_in_with_alarms, watch_problems
from tests.support.console_client import PASSWORD
from tests.support.console_station import (
    BUSY_ACCOUNT,
    BUSY_PASSCODE,
    Hub,
    busy_fire,
    served_busy_site,
)

SCROLLERS = ", ".join(
    f"#alarm-screen {box}" for box in (".alarm-body", ".col-main", ".column", ".list-box")
)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    with served_busy_site(tmp_path / "station") as hub:
        yield hub


def open_fire(hub: Hub, page: Page) -> int:
    """The busy fire, in process with SUP, open on a 1280x800 page of SUP's."""
    fire, _ = busy_fire(hub, "SUP")
    page.set_viewport_size({"width": 1280, "height": 800})
    sign_in_with_alarms(page, hub.url, "SUP", PASSWORD)
    page.click(f'#in-process tbody tr[data-alarm-id="{fire}"]')
    expect(page.locator("#alarm-state")).to_have_text("in process: SUP")
    expect(page.locator("#call-list tbody tr")).to_have_count(4)
    return fire


def test_p_checks_the_passcode_again_after_a_check(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    fire = open_fire(hub, page)
    box = page.locator("#passcode-text")
    page.keyboard.press("p")
    expect(box).to_be_focused()
    page.keyboard.type("red-herring")
    page.keyboard.press("Enter")
    expect(page.locator("#passcode-answer")).to_have_text("NOT VERIFIED")
    expect(box).not_to_be_focused()
    expect(page.locator("#alarm-feedback")).to_have_text(
        f"Alarm {fire} FIRE {BUSY_ACCOUNT}: passcode NOT VERIFIED."
    )

    page.keyboard.press("p")  # the console's key again: no "p" typed into the box
    expect(box).to_be_focused()
    expect(box).to_have_value("")
    page.keyboard.type(BUSY_PASSCODE)
    page.keyboard.press("Enter")
    expect(page.locator("#passcode-answer")).to_have_text("VERIFIED")
    expect(page.locator("#alarm-facts dd.passcode-verified")).to_have_text("Y")
    assert hub.alarm(fire)["passcode_verified"] == "Y"
    assert problems == [], problems


def test_enter_in_the_call_note_logs_the_call(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    open_fire(hub, page)
    page.keyboard.press("c")  # the call form, on the next contact: in view, focused
    form = page.locator("#form-call")
    expect(form).to_be_visible()
    expect(page.locator("#call-contact")).to_be_focused()
    assert cut_off(page, "#form-call") < 1  # pixels
    page.keyboard.press("a")
    page.locator("#call-text").focus()
    page.keyboard.type("on his way")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("with the keys")
    expect(page.locator("#call-text")).to_have_value("on his way\nwith the keys")
    expect(form).to_be_visible()
    page.keyboard.press("Enter")
    expect(form).to_be_hidden()
    expect(page.locator("#alarm-log")).to_contain_text("DAVE NEIGHBOUR 555-4000 ANSWERED")
    expect(page.locator("#alarm-log")).to_contain_text("with the keys")
    expect(page.locator("#alarm-feedback")).to_contain_text("call to 555-4000 logged: answered")
    expect(page.locator("#call-text-keys")).to_have_text(
        "Enter logs the call, Shift+Enter starts a new line"
    )
    shot(page, "focus-call-logged")
    assert problems == [], problems


def test_a_resolve_says_so_and_opens_the_next_alarm_at_its_top(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    fire = open_fire(hub, page)
    sup = hub.console().sign_in("SUP", PASSWORD)
    sup.ok(f"/alarms/{fire}/dispatch", {"agency": "fire", "avs": 0})  # the plan's required step
    expect(page.locator("#plan-dispatches tbody tr")).to_have_count(1)
    first = page.locator("#sibling-list tbody tr").first.get_attribute("data-alarm-id")
    assert first is not None

    page.evaluate(  # the operator has scrolled everything down
        f"() => {{ for (const box of document.querySelectorAll({SCROLLERS!r})) "
        "box.scrollTop = box.scrollHeight; }"
    )
    page.keyboard.press("r")
    expect(page.locator("#resolve-code")).to_be_focused()
    assert cut_off(page, "#form-resolve") < 1
    page.select_option("#resolve-code", "FA")
    page.click('#form-resolve button[type="submit"]')

    feedback = page.locator("#alarm-feedback")
    expect(feedback).to_contain_text(f"Alarm {fire} FIRE {BUSY_ACCOUNT} resolved (FA).")
    expect(feedback).to_contain_text(
        f"Next: Alarm {first} BURG {BUSY_ACCOUNT} (in process with you), opened."
    )
    expect(page.locator("#alarm-title")).to_contain_text("BURGLARY ZONE 001")
    expect(page.locator("#alarm-state")).to_have_text("in process: SUP")
    expect(page.locator(f'#sibling-list tr[data-alarm-id="{first}"]')).to_have_count(0)
    tops = page.evaluate(
        f"() => [...document.querySelectorAll({SCROLLERS!r})]"
        ".filter((box) => !box.matches('.call-list-box')).map((box) => box.scrollTop)"
    )
    assert set(tops) == {0}, tops
    assert hub.alarm(fire)["resolution"] == "FA"
    shot(page, "focus-resolved-next")
    assert problems == [], problems
