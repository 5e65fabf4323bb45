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
def open_page() -> Iterator[Page]:
    """A page of a new headless Chromium, closed at the end of the block (before the server
    stops: its event stream ends with it)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"))


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
