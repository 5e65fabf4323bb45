"""Fixtures of the crash tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.crashing import Servers


@pytest.fixture
def servers() -> Iterator[Servers]:
    """Servers a test starts; whatever still runs at its end is killed."""
    started = Servers()
    yield started
    started.kill_all()
