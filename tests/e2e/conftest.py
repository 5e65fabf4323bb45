"""Fixtures of the console's browser tests: a station served by a real ``alarmhub serve``
(``hub``; a module with other data defines its own) and a page of Debian's Chromium (``page``):
one Chromium for a module's tests (``browser``), a new browser context for each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.support.browser import chromium, open_page
from tests.support.console_station import Hub, provision_console, served


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    with served(data_dir, token, engine) as hub:
        yield hub


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, hub: Hub) -> Iterator[Page]:
    with open_page(browser) as page:
        yield page
