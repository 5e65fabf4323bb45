"""The alarm screen's layout in a real browser (Debian's Chromium driven by Playwright) against a
real server: a fire of account 700042 with every block on it (facts, the plan, a call list of
four contacts with three numbers each, the zone, agencies and permit, the passcode box, the
schedule with its buttons, five other open alarms of the site with the supervisor's move row, the
alarm's signals, a long action log and history, the messages to a subscriber and the open form
of the plan's notify step), at 1280x800, 1920x1080 and 2560x1440. No visible
block covers another, no control covers another, a click on the passcode box, the manual
open/close buttons and the move select lands on them, and what the operator does next (the plan's
next step, the call list's next contact, the passcode box) is on screen when the alarm opens.
The queues' Flags column and a contact's third number are shown whole. Screenshots go to
``artifacts/console/``; the documentation's ``console-layout-*.png`` are copies of
``layout-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from alarmhub.core.plans import SHIPPED, Step, StepKind
from alarmhub.store import contacts as contact_store
from alarmhub.store import plans
from tests.support.browser import (
    SHOWN_JS,
    shot,
    sign_in_not_receiving,
    sign_in_with_alarms,
    watch_problems,
)
from tests.support.console_client import PASSWORD
from tests.support.console_station import (
    BUSY_ACCOUNT,
    SIBLING_SIGNALS,
    Hub,
    busy_fire,
    served_busy_site,
)

SIZES = ((1280, 800), (1920, 1080), (2560, 1440))

# the page's own measure: each visible element's box, cut to what its scrolling boxes and the
# window show; the pairs of those that overlap (an element and its own parts aside)
MEASURE = (
    "(args) => {"
    + SHOWN_JS
    + """
  const [blockSelector, controlSelector, clickable, inView, whole] = args;
  const screen = document.querySelector("#alarm-screen");
  function visible(node) {
    if (!node.checkVisibility({ visibilityProperty: true })) return null;
    const { rect } = shown(node);
    return rect.right - rect.left > 1 && rect.bottom - rect.top > 1 ? rect : null;
  }
  function name(node) {
    const id = node.id ? `#${node.id}` : "";
    const classes = typeof node.className === "string" ? node.className.trim() : "";
    const cls = classes ? `.${classes.split(/\\s+/).join(".")}` : "";
    const text = (node.textContent || node.value || "").trim().slice(0, 30);
    return `${node.tagName.toLowerCase()}${id}${cls} "${text}"`;
  }
  function overlaps(selector) {
    const found = [];
    const nodes = [...screen.querySelectorAll(selector)]
      .map((node) => ({ node, rect: visible(node) })).filter((n) => n.rect);
    for (let i = 0; i < nodes.length; i += 1) {
      for (let j = i + 1; j < nodes.length; j += 1) {
        const a = nodes[i], b = nodes[j];
        if (a.node.contains(b.node) || b.node.contains(a.node)) continue;
        const w = Math.min(a.rect.right, b.rect.right) - Math.max(a.rect.left, b.rect.left);
        const h = Math.min(a.rect.bottom, b.rect.bottom) - Math.max(a.rect.top, b.rect.top);
        if (w > 1 && h > 1) found.push(`${name(a.node)} overlaps ${name(b.node)}`);
      }
    }
    return found;
  }
  const problems = [...overlaps(blockSelector), ...overlaps(controlSelector)];
  for (const selector of inView) {
    const node = document.querySelector(selector);
    if (!node) { problems.push(`${selector} is missing`); continue; }
    const cut = cutOff(node);
    if (!visible(node) || cut > 2) problems.push(`${selector} is not in view: ${cut} px cut`);
  }
  for (const node of document.querySelectorAll(whole)) {
    const { rect, box } = shown(node);
    if (Math.abs(rect.left - box.left) + Math.abs(rect.right - box.right) > 2) {
      problems.push(`${name(node)} is cut off at the side`);
    }
  }
  for (const selector of clickable) {
    const node = document.querySelector(selector);
    node.scrollIntoView({ block: "nearest" });
    const box = node.getBoundingClientRect();
    const hit = document.elementFromPoint((box.left + box.right) / 2, (box.top + box.bottom) / 2);
    if (!hit || !(hit === node || node.contains(hit))) {
      problems.push(`a click on ${selector} lands on ${hit ? name(hit) : "nothing"}`);
    }
  }
  return problems;
}
"""
)
BLOCKS = ", ".join(
    f".screen {part}"
    for part in (
        ".alarm-head", ".alarm-body section", "h3", "dl", "table", "form", "ol", "fieldset",
        ".actions", ".schedule-buttons", "p",
    )
)  # fmt: skip
CONTROLS = ".screen button, .screen input, .screen select, .screen textarea"
CLICKABLE = ["#passcode-text", "#schedule-open", "#schedule-close", "#move-to"]
IN_VIEW = [
    "#passcode-text",
    "#alarm-response h3",
    "#call-list tr.next",
    "#plan-steps .step.next",
    "#alarm-actions",
]
NOTIFY_IN_VIEW = ["#notify-recipients", "#form-notify button[type=submit]"]
WHOLE = "#call-list button.phone"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    with served_busy_site(tmp_path / "station") as hub:
        yield hub


def layout_problems(page: Page, in_view: list[str] = IN_VIEW) -> list[str]:
    args: list[Any] = [BLOCKS, CONTROLS, CLICKABLE, in_view, WHOLE]
    return list(page.evaluate(MEASURE, args))


def test_the_alarm_screen_with_everything_on_it_at_three_sizes(hub: Hub, page: Page) -> None:
    problems = watch_problems(page)
    first = contact_store.list_contacts(hub.engine, BUSY_ACCOUNT)[0]  # messaged of the fire
    changes = {"email": "owner@example.com", "notify": ("alarm",), "notify_by": ("email",)}
    contact_store.update_contact(hub.engine, BUSY_ACCOUNT, first["id"], changes)
    fire_plan = [*SHIPPED["FIRE"], Step(StepKind.NOTIFY)]  # and its notify step's form
    plans.set_plan(hub.engine, "FIRE", fire_plan, account=BUSY_ACCOUNT)
    fire, siblings = busy_fire(hub, "SUP")
    sign_in_with_alarms(page, hub.url, "SUP", PASSWORD)
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.click(f'#in-process tbody tr[data-alarm-id="{fire}"]')
        expect(page.locator("#alarm-state")).to_have_text("in process: SUP")
        expect(page.locator("#call-list tbody tr")).to_have_count(4)
        expect(page.locator("#sibling-list tbody tr")).to_have_count(len(SIBLING_SIGNALS))
        expect(page.locator("#alarm-log tbody tr")).to_have_count(
            16
        )  # taken, 8 calls, 6 notes, a passcode
        expect(page.locator("#form-move")).to_be_visible()
        expect(page.locator("#schedule-open")).to_be_visible()
        expect(page.locator("#plan-steps .step.next")).to_be_visible()
        expect(page.locator("#response-facts")).to_contain_text("MAIN STAGE SMOKE")
        expect(page.locator("#alarm-messages-table tbody tr")).to_have_count(1)
        shot(page, f"layout-{width}x{height}")
        assert layout_problems(page) == [], f"at {width}x{height}"
        # the notify step's form open: it covers nothing, and its Send is in view
        page.click("#plan-notify")
        expect(page.locator("#form-notify")).to_be_visible()
        shot(page, f"layout-notify-{width}x{height}")
        assert layout_problems(page, NOTIFY_IN_VIEW) == [], f"notify at {width}x{height}"
        page.click("#form-notify button[data-cancel]")
        expect(page.locator("#form-notify")).to_be_hidden()
        page.keyboard.press("Escape")
        expect(page.locator("#alarm-screen")).to_be_hidden()
    assert len(siblings) == len(SIBLING_SIGNALS)
    assert problems == [], problems


def test_the_queues_show_every_column_whole_at_1600(hub: Hub, page: Page) -> None:
    fire, _ = busy_fire(hub, "SUP")
    sign_in_not_receiving(page, hub.url, "OP1", PASSWORD)
    page.set_viewport_size({"width": 1600, "height": 1000})
    row = page.locator(f'#in-process tbody tr[data-alarm-id="{fire}"]')
    expect(row.locator("td.flags")).to_contain_text("RESTORED")
    cut = page.evaluate(
        """() => [...document.querySelectorAll("table.alarms th, table.alarms td")]
          .filter((cell) => cell.checkVisibility())
          .filter((cell) => {
            const box = cell.getBoundingClientRect();
            const scroll = cell.closest(".scroll").getBoundingClientRect();
            return box.right > scroll.right + 1 || box.left < scroll.left - 1;
          })
          .map((cell) => cell.textContent)"""
    )
    shot(page, "layout-queues-1600")
    assert cut == []
