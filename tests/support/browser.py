"""The console in a real browser: Debian's Chromium driven by Playwright, a page of the size
the screenshots use, the screenshots themselves, and the errors a page logs or throws."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, expect, sync_playwright

from tests.support.processes import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = ROOT / "artifacts" / "console"
WAIT_MS = 10_000  # generous deadlines for what the live feed brings; never a timing assertion
expect.set_options(timeout=WAIT_MS)  # page.set_default_timeout does not reach expect()


def launch(playwright: Playwright) -> Browser:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium package "
            "(apt-get install -y chromium; .ci/run does it) to run the browser tests",
            pytrace=False,
        )
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed at the end of the block: one for a module's tests, each of
    which opens its pages in browser contexts of its own (``open_page``)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def open_page(browser: Browser) -> Iterator[Page]:
    """A page in a new context of ``browser`` (its own cookies and storage, as in a browser of
    its own); at the end of the block every context of the browser is closed, the ones the test
    opened for other users too (before the server stops: their event streams end with them)."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        yield page
    finally:
        for opened in browser.contexts:
            opened.close()


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"))


SHOWN_JS = """
function shown(node) {
  // the element's box, and the part of it its scrolling boxes and the window show
  const box = node.getBoundingClientRect();
  let rect = { left: box.left, top: box.top, right: box.right, bottom: box.bottom };
  for (let p = node.parentElement; p; p = p.parentElement) {
    const style = getComputedStyle(p);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const clip = p.getBoundingClientRect();
    rect = {
      left: Math.max(rect.left, clip.left), top: Math.max(rect.top, clip.top),
      right: Math.min(rect.right, clip.right), bottom: Math.min(rect.bottom, clip.bottom),
    };
  }
  rect = {
    left: Math.max(rect.left, 0), top: Math.max(rect.top, 0),
    right: Math.min(rect.right, innerWidth), bottom: Math.min(rect.bottom, innerHeight),
  };
  return { rect, box };
}
function cutOff(node) {
  // how many pixels of the element's box are out of sight (0: wholly in view)
  const { rect, box } = shown(node);
  if (rect.right <= rect.left || rect.bottom <= rect.top) return Infinity;
  return Math.abs(rect.left - box.left) + Math.abs(rect.right - box.right)
    + Math.abs(rect.top - box.top) + Math.abs(rect.bottom - box.bottom);
}
"""
"""Functions for a page's measures: ``shown(node)`` (its box, and the part of it on screen),
``cutOff(node)`` (how many pixels of it are out of sight)."""


def cut_off(page: Page, selector: str) -> float:
    """How many pixels of the first element ``selector`` finds are out of sight: cut by the
    boxes that scroll it or by the window (0: wholly in view)."""
    return float(
        page.evaluate(
            f"(selector) => {{ {SHOWN_JS} return cutOff(document.querySelector(selector)); }}",
            selector,
        )
    )


def watch_problems(page: Page) -> list[str]:
    """The errors a page logs or throws, as they happen (a test ends asserting there were none)."""
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def sign_in_not_receiving(page: Page, url: str, code: str, password: str) -> None:
    """Sign ``code`` in on the console at ``url`` and turn receiving off, so that alarms stay
    pending until taken."""
    page.goto(f"{url}/console/login")
    page.fill("#code", code)
    page.fill("#password", password)
    page.click("#sign-in")
    expect(page.locator("#receiving")).to_have_text("Receiving Signals")
    page.click("#receiving")
    expect(page.locator("#receiving")).to_have_text("Not Receiving")


def sign_in_with_alarms(page: Page, url: str, code: str, password: str) -> None:
    """Sign ``code``, who has alarms in process, in on the console at ``url``: the screen of
    one of them opens by itself; close it."""
    page.goto(f"{url}/console/login")
    page.fill("#code", code)
    page.fill("#password", password)
    page.click("#sign-in")
    expect(page.locator("#alarm-screen")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#alarm-screen")).to_be_hidden()
