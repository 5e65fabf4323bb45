"""Fixtures of the console's browser tests: a station served by a real ``alarmhub serve``
(``hub``; a module with other data defines its own) and a page of Debian's Chromium (``page``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.support.browser import open_page
from tests.support.console_station import Hub, provision_console, served


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    data_dir = tmp_path / "station"
    token, engine = provision_console(data_dir)
    with served(data_dir, token, engine) as hub:
        yield hub


@pytest.fixture
def page(hub: Hub) -> Iterator[Page]:
    with open_page() as page:
        yield page
